"""The promises the project makes about itself: public surface, README and CI agree."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import producer
import producer.errors

ROOT = Path(__file__).resolve().parents[1]


def test_public_all_names_exist_and_are_exported() -> None:
    for name in producer.__all__:
        assert hasattr(producer, name), name
    for name in producer.errors.__all__:
        assert hasattr(producer.errors, name), name
    assert "Message" in producer.__all__
    assert "ProducerError" in producer.__all__


def test_every_error_derives_from_producer_error() -> None:
    for name in producer.errors.__all__:
        value = getattr(producer.errors, name)
        if isinstance(value, type) and issubclass(value, BaseException):
            assert issubclass(value, producer.errors.ProducerError), name


def test_py_typed_markers_ship() -> None:
    assert (ROOT / "producer" / "py.typed").is_file()
    assert (ROOT / "latency_fault" / "py.typed").is_file()


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Set-up", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\s*(python3 -m venv .+)$", section, flags=re.MULTILINE)


def test_readme_gives_two_setup_commands() -> None:
    commands = _readme_commands()
    assert len(commands) == 2, commands
    assert "pytest" in commands[1]


def test_ci_runs_exactly_the_readme_test_command() -> None:
    ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert _readme_commands()[1] in ci_lines


def test_cli_help_runs() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "producer", "--help"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    assert "usage: python -m producer" in out.stdout


def test_nothing_the_tests_need_lives_outside_the_repository() -> None:
    """A clone must test itself: no tracked file points at a sibling directory."""
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    outside = re.compile(r"\.\./" + "shared|/work/" + "shared")  # split: not a match itself
    offenders = []
    for name in tracked:
        path = ROOT / name
        if name.startswith("tests/golden/") or path.suffix not in {".py", ".md", ".toml", ""}:
            continue
        if path.is_file() and outside.search(path.read_text(errors="replace")):
            offenders.append(name)
    assert offenders == []
