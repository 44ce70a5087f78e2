"""Every benchmark has a ``--quick`` mode, as the README's Performance section says: each
public module of ``benchmarks/`` lists ``--quick`` among its options (``--help``, read in
this process: nothing is run). Two are no benchmark of their own, as the README says too:
``ab_throughput`` passes ``-- --quick`` on to its ``throughput`` rounds and ``report`` only
renders result files. A ``--quick`` run ends by saying what its figures cannot show."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from benchmarks._common import QUICK_NOTE, finish

ROOT = Path(__file__).resolve().parents[2]
NOT_TIMED = {"ab_throughput", "report"}  # README: forwards --quick / runs nothing
BENCHMARKS = sorted(p.stem for p in (ROOT / "benchmarks").glob("[!_]*.py"))


@pytest.mark.parametrize("name", sorted(set(BENCHMARKS) - NOT_TIMED))
def test_each_benchmark_has_a_quick_mode(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    module = importlib.import_module(f"benchmarks.{name}")
    with pytest.raises(SystemExit) as done:
        module.main(["--help"]) if module.main.__code__.co_argcount else _help_of(module)
    assert done.value.code == 0
    assert re.search(r"^\s+--quick\b", capsys.readouterr().out, re.M)


def _help_of(module: object) -> None:
    """For a ``main()`` reading ``sys.argv`` itself."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("sys.argv", [module.__name__, "--help"])  # type: ignore[attr-defined]
        module.main()  # type: ignore[attr-defined]


def test_the_readme_names_the_ones_without_and_why() -> None:
    text = " ".join((ROOT / "README.md").read_text().split())
    assert "`ab_throughput` passes `-- --quick` on to its `throughput` rounds" in text
    assert "and `report` runs nothing" in text
    assert set(BENCHMARKS) >= NOT_TIMED


def test_a_quick_run_says_what_it_cannot_show() -> None:
    assert "cannot show the targets" in QUICK_NOTE and "not a verdict" in QUICK_NOTE
    assert "QUICK_NOTE" in finish.__code__.co_names  # printed by the end every one shares
