"""A newcomer's first screen of the README names what the package installs: its import
names and its console script (pyproject's ``packages`` and ``[project.scripts]``)."""

from __future__ import annotations

from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
FIRST_SCREEN_LINES = 30


def test_the_first_screen_names_the_import_names_and_the_console_script() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages = project["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]
    scripts = list(project["project"]["scripts"])
    first = "\n".join((ROOT / "README.md").read_text().splitlines()[:FIRST_SCREEN_LINES])
    for name in [*packages, *scripts]:
        assert f"`{name}`" in first, f"README's first {FIRST_SCREEN_LINES} lines miss `{name}`"
