"""The demo's ROUTING verdict is true on a busy machine (issue 34): it is judged against the
delay the demo injected (broker-b +300 ms), not against the healthy phase's p99, which the
machine's load moves. Run beside a CPU hog (two busy processes on a two-core machine)."""

from __future__ import annotations

import io
import subprocess
import sys
from collections.abc import Iterator

import anyio
import pytest

from producer.cli import build_parser
from producer.cli.demo import run_demo

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]


@pytest.fixture
def cpu_hog() -> Iterator[None]:
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


@pytest.mark.usefixtures("cpu_hog")
@pytest.mark.parametrize(
    ("routing", "verdicts"),
    [
        ("adaptive", ["held"]),
        # Starved so hard that the healthy brokers answer in over a third of the injected
        # delay, the allowance nears broker-b's round-robin share and the verdict says it
        # cannot tell (seen once in 12 runs beside four busy processes); never "held".
        ("off", ["did NOT hold", "not judged"]),
    ],
)
async def test_the_routing_verdict_is_true_beside_a_cpu_hog(
    routing: str, verdicts: list[str]
) -> None:
    out = io.StringIO()
    argv = ["demo", "--duration-s", "8", "--rate", "400", "--no-live", "--routing", routing]
    with anyio.fail_after(100):  # a hang guard
        code = await run_demo(build_parser().parse_args(argv), out=out)
    text = " ".join(out.getvalue().split())  # the line may be wrapped
    assert code == 0, text
    routing_line = text[text.index("ROUTING:") :]
    said = routing_line[: routing_line.index(" (brown-out p99")].rsplit(": ", 1)[-1]
    assert said.split(" (")[0] in verdicts, routing_line[:500]
