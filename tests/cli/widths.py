"""Every command's output fits a 100-column screen (``producer.cli.common.MAX_LINE``)."""

from __future__ import annotations

from producer.cli.common import MAX_LINE


def assert_fits(text: str) -> None:
    long = [line for line in text.splitlines() if len(line) > MAX_LINE]
    assert not long, f"{len(long)} line(s) over {MAX_LINE} columns, e.g. {long[0]!r}"
