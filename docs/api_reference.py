"""Build the API reference into ``docs/api/`` (HTML, by pdoc): ``python docs/api_reference.py``.

Needs the ``docs`` extra (``pip install -e ".[docs]"``); open ``docs/api/index.html``.
The modules listed here are the public API; ``tests/test_api_docstrings.py`` checks that
every name they export, and every public method and property of their classes, has a
docstring.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

#: The packages a user imports (``producer.cli`` is the console script, not an API).
PUBLIC_MODULES = (
    "producer",
    "producer.blocking",
    "producer.consumer",
    "producer.errors",
    "producer.testing",
    "producer.spark",
    "latency_fault",
)
OUT = Path(__file__).resolve().parent / "api"


def main() -> None:
    """Render PUBLIC_MODULES to ``docs/api/`` (docstrings are reStructuredText)."""
    try:
        import pdoc
    except ImportError:
        sys.exit('the API reference needs pdoc: pip install -e ".[docs]"')
    # Annotations naming types imported for type checking only are shown as written.
    warnings.filterwarnings("ignore", message="Error parsing type annotation")
    pdoc.render.configure(docformat="restructuredtext", show_source=False)
    pdoc.pdoc(*PUBLIC_MODULES, output_directory=OUT)
    print(f"OK API reference in {OUT / 'index.html'}")


if __name__ == "__main__":
    main()
