"""The commands' 100-column wrap never parts a value from its label or a unit from its value
(issue 34: the demo printed ``failed 0 retries/msg`` and then ``  0.000`` alone)."""

from __future__ import annotations

import re

import pytest

from producer.cli.common import MAX_LINE, wrapped

DEMO_LINE = (
    "t=  1-2s [broker-b brown-out +300 ms] 399 msg/s p50 0.8 p99 301 p999 302 ms | failed 0 "
    "retries/msg 0.000"
)
ROUTING = (
    "ROUTING: broker-b was slowed by 300 ms; it stored 238 of the brown-out's 738 sends (32.2%); "
    "adaptive routing may send it 23 (3.1%: 12 before it sees the delay, 7 trials, 3 after "
    "probes, 1 at its slow weight); 63 sends issued after our event loop stalled set aside: did "
    "NOT hold (brown-out p99 365.6 ms, healthy p99 8.6 ms)"
)


@pytest.mark.parametrize("line", [DEMO_LINE, ROUTING])
@pytest.mark.parametrize("width", [MAX_LINE, 80, 60, 40])
def test_no_wrapped_line_starts_with_a_value(line: str, width: int) -> None:
    lines = wrapped(line, width).split("\n")
    assert len(lines) > 1  # it did wrap
    for continued in lines[1:]:
        first = continued.split()[0]
        assert not re.fullmatch(r"-?[\d.,]+%?x?\)?|ms\)?|msg/s", first), lines
    assert " ".join(" ".join(lines).split()) == " ".join(line.split())  # nothing lost
    assert all(len(text) <= width for text in lines)


def test_the_demo_line_keeps_its_last_pair_whole_at_100_columns() -> None:
    assert wrapped(DEMO_LINE).split("\n")[-1] == "  retries/msg 0.000"
