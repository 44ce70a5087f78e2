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


# -- the rules live in docs/, and every citation of one points at text that exists ---------

_RULE_ID = re.compile(r"\b([SAF])(\d{1,2})\b(?:\s*-\s*\1(\d{1,2})\b)?")
_SECTION = re.compile(r"\d+(?:\.\d+)?(?:-\d+(?:\.\d+)?)?")  # "2.6", "1.3-1.5", "3"
_CONSUMING_CITE = re.compile(r"consuming\.md\s+((?:" + _SECTION.pattern + r"(?:,|\s|and)*)+)")


def _cited_sources() -> dict[str, str]:
    """Every tracked Python and Markdown file outside docs/ and the golden recordings (whose
    READMEs name their own scenarios and steps, which look like rule ids), by name."""
    tracked = subprocess.run(
        ["git", "ls-files", "*.py", "*.md"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    skipped = ("docs/", "tests/golden/")
    return {name: (ROOT / name).read_text() for name in tracked if not name.startswith(skipped)}


def _expand(first: str, last: str | None) -> list[str]:
    """ "2.4-2.7" -> 2.4 2.5 2.6 2.7; "1-3" -> 1 2 3."""
    if last is None:
        return [first]
    head, _, low = first.rpartition(".")
    high = last.rpartition(".")[2]
    prefix = head + "." if head else ""
    return [prefix + str(n) for n in range(int(low), int(high) + 1)]


def test_every_producer_rule_cited_is_written_in_docs_semantics() -> None:
    defined = set(re.findall(r"^- \*\*([SAF]\d+)\.\*\*", _doc("semantics.md"), re.MULTILINE))
    assert {"S1", "S11", "A1", "A7", "F1", "F5"} <= defined
    cited: set[str] = set()
    for text in _cited_sources().values():
        for letter, low, high in _RULE_ID.findall(text):
            cited.update(letter + n.rpartition(".")[2] for n in _expand(low, high or None))
    assert cited, "no rule id found: the pattern is broken"
    assert cited - defined == set()


def test_every_consumer_section_cited_is_a_heading_of_docs_consuming() -> None:
    headings = set(re.findall(r"^#{2,3} (\d+(?:\.\d+)?)\.? ", _doc("consuming.md"), re.MULTILINE))
    cited: set[str] = set()
    for text in _cited_sources().values():
        for run in _CONSUMING_CITE.findall(" ".join(text.split())):
            for section in _SECTION.findall(run):
                first, _, last = section.partition("-")
                cited.update(_expand(first, last or None))
    assert {"2.6", "1.6", "3.3"} <= cited, "citations not found: the pattern is broken"
    assert cited - headings == set()


def test_no_file_cites_the_old_rule_files() -> None:
    old = re.compile(r"\b(?:DESIGN|CONSUMER)\.md\b|\.\./" + "shared")  # split: not a match itself
    offenders = [name for name, text in _cited_sources().items() if old.search(text)]
    assert offenders == []


def _doc(name: str) -> str:
    return (ROOT / "docs" / name).read_text()


# -- the README is a map a newcomer can follow ----------------------------------------------


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_the_readme_contents_point_at_its_headings() -> None:
    text = (ROOT / "README.md").read_text()
    contents = text.split("## Contents", 1)[1].split("\n## ", 1)[0]
    anchors = re.findall(r"\]\(#([^)]+)\)", contents)
    headings = {_slug(h) for h in re.findall(r"^##+ (.+)$", text, flags=re.MULTILINE)}
    assert len(anchors) >= 10 and set(anchors) <= headings, set(anchors) - headings
    top = [_slug(h) for h in re.findall(r"^## (.+)$", text, flags=re.MULTILINE)]
    assert [a for a in top if a != "contents"] == anchors  # every section listed, in order


def test_every_relative_link_in_the_docs_exists() -> None:
    missing = []
    for doc in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", doc.read_text()):
            if not (doc.parent / target).exists():
                missing.append(f"{doc.relative_to(ROOT)} -> {target}")
    assert missing == []


def test_the_readme_lists_every_example_and_only_real_ones() -> None:
    text = (ROOT / "README.md").read_text()
    named = set(re.findall(r"python -m examples\.(\w+)", text))  # .venv/bin/python -m ...
    named |= set(re.findall(r"examples/(test_\w+)\.py", text))
    on_disk = {p.stem for p in (ROOT / "examples").glob("*.py") if p.stem != "__init__"}
    assert named == on_disk


BARE_PYTHON = re.compile(r"(?<![\w./-])python\s+(?:-m\s|docs/|examples/|benchmarks/)")


def test_every_command_in_the_docs_runs_without_an_activated_venv() -> None:
    """The set-up makes ``.venv`` and never activates it, so a bare ``python`` is not the
    one with this package: every command the docs give says ``.venv/bin/python`` (issue 46)."""
    docs = [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), ROOT / "producer/testing/README.md"]
    bare = [
        f"{doc.relative_to(ROOT)}: {match.group(0)!r}"
        for doc in docs
        for match in BARE_PYTHON.finditer(doc.read_text())
    ]
    assert bare == []
    assert BARE_PYTHON.search("run `python -m producer demo`")  # the rule sees one
    assert not BARE_PYTHON.search("`.venv/bin/python -m producer demo`; python3 -m venv .venv")
