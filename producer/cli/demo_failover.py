"""``python -m producer demo --failover``: a master killed under steady produce and consume,
on an in-process dev cluster of two replicated groups (``slaves=1``); the run itself is
:mod:`producer.cli.failover`'s."""

from __future__ import annotations

import argparse
import time
from typing import TextIO

from producer.cli.common import wrapped
from producer.cli.failover import FailoverReport, FailoverSettings, run_failover
from producer.testing import DevCluster

__all__ = ["run_failover_demo", "verdict"]

TOPIC = "DemoFailover"
BROKER = "broker-a"
EXIT_LOST = 1


class _InProcess:
    """:class:`~producer.cli.failover.FailoverControl` on a cluster in this process."""

    def __init__(self, cluster: DevCluster) -> None:
        self.cluster = cluster
        self.after_kill: dict[str, object] = {}  # the group's state right after the kill

    async def kill(self) -> None:
        await self.cluster.kill_master(BROKER)
        self.after_kill = self.cluster.replication(BROKER)

    async def restart(self) -> None:
        await self.cluster.restart_master(BROKER)

    async def slave_served(self) -> int:
        served = self.cluster.replication(BROKER)["slave_served"]
        assert isinstance(served, int)
        return served


async def run_failover_demo(args: argparse.Namespace, out: TextIO) -> int:
    """Warm up for a quarter of ``--duration-s``, kill broker-a's master for half of it,
    restart it and drain for up to ``--duration-s``; print the report. Exit 1 if an
    acknowledged message was not read by then."""
    async with DevCluster(brokers=2, topics={TOPIC: 4}, slaves=1, seed=args.seed) as cluster:
        settings = FailoverSettings(
            cluster.namesrv_addr,
            TOPIC,
            BROKER,
            rate=args.rate,
            warmup_s=args.duration_s / 4,
            window_s=args.duration_s / 2,
            drain_s=args.duration_s,
        )
        begin = time.monotonic()

        def phase(text: str) -> None:
            print(f"t={time.monotonic() - begin:5.1f}s {text}", file=out, flush=True)

        control = _InProcess(cluster)
        report = await run_failover(settings, control, on_phase=phase)
    group = control.after_kill
    print(
        f"{BROKER} after the kill: replication {group.get('state')}, master alive "
        f"{group.get('master_alive')}, slave alive {group.get('slave_alive')}",
        file=out,
    )
    for line in report.lines():
        print(wrapped(line), file=out)
    text, code = verdict(report)
    print(wrapped(text), file=out)
    return code


def verdict(report: FailoverReport) -> tuple[str, int]:
    """The verdict line and the exit status: 0 only if every acknowledged message was read."""
    if report.unread:
        text = (
            f"VERDICT: {report.unread} acknowledged message(s) not read within "
            f"{report.drain_s:.1f} s of the master's return"
        )
        return text, EXIT_LOST
    return "VERDICT: every acknowledged message was read: nothing lost", 0
