"""``python -m producer consume-demo``: a small run ends with every order consumed."""

from __future__ import annotations

import io
import re

import anyio
import pytest

from producer.cli import build_parser, main
from producer.cli.consume_demo import run_consume_demo
from tests.cli.widths import assert_fits

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(90)]


async def test_a_small_run_retries_dead_letters_redrives_and_loses_nothing() -> None:
    out = io.StringIO()
    args = build_parser().parse_args(
        ["consume-demo", "--messages", "300", "--poison", "3", "--max-reconsume-times", "2"]
    )
    with anyio.fail_after(80):
        code = await run_consume_demo(args, out)
    text = out.getvalue()
    assert code == 0, text
    assert "3 order(s) in %DLQ%demo-workers" in text
    assert "re-drove 3 dead letter(s) to DemoOrders" in text
    assert "VERDICT: 300 of 300 orders consumed successfully, 0 missing, 0 duplicate" in text
    assert "t=" in text and "sent_back=" in text
    letters = {int(n) for n in re.findall(r"dlq=\s*(\d+)", text)}
    assert max(letters) == 3, letters  # the letters, not the re-drive's marks beside them
    assert re.search(r"redriven=\s*3 ", text), text[-1500:]
    assert_fits(text)


def test_bad_arguments_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["consume-demo", "--fail-rate", "1.5"]) == 2
    assert "--fail-rate in [0, 1)" in capsys.readouterr().out
