"""Test modules share helpers through helper modules (``tests/helpers/``, or another module
whose name does not start with ``test_``), never by importing another test module: such an
import runs that module's fixtures and marks at import and ties two test files together
(issue 33 item 6)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).parent


def _imported_modules(path: Path) -> list[str]:
    """Every module ``path`` imports, absolute (``from .x import y`` resolved)."""
    package = ".".join(path.relative_to(TESTS.parent).parent.parts)
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            found.append(base)
            found += [f"{base}.{alias.name}" for alias in node.names]  # `from pkg import test_x`
    return found


def test_no_test_module_imports_another() -> None:
    offenders = [
        f"{path.relative_to(TESTS.parent)} imports {module}"
        for path in sorted(TESTS.rglob("*.py"))
        for module in _imported_modules(path)
        if module.startswith("tests.") and module.rsplit(".", 1)[-1].startswith("test_")
    ]
    assert not offenders, "move the shared helper to tests/helpers/: " + "; ".join(offenders)
