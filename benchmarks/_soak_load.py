"""The soak's moving parts: the mixed senders, the fault driver and the resource sampler.

Runtime-neutral (anyio), so the same soak runs on asyncio, uvloop and trio. Faults go
to the cluster's HTTP API through ``urllib`` in a worker thread: no HTTP client library
that ties it to one event loop.
"""

from __future__ import annotations

import json
import os
import random
import time
import tracemalloc
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from typing import IO, Any

import anyio
import anyio.to_thread
import sniffio

from benchmarks._common import rss_bytes
from producer import Message, Producer, SendResult
from producer.errors import ProducerError

BROKERS = ("broker-a", "broker-b", "broker-c")
KINDS = ("sync", "async", "oneway", "batch", "keyed")
BATCH = 4
#: One fault at a time, on one broker: what the soak throws at the producer.
FAULTS: tuple[dict[str, Any], ...] = (
    {"latency_ms": 300},
    {"latency_ms": 50, "jitter_ms": 50},
    {"error_code": 14, "error_probability": 0.3},
    {"error_code": 2, "error_probability": 0.2},
    {"error_code": 13, "error_probability": 0.05},  # not retried: those sends fail
    {"store_status": 10, "store_status_probability": 0.3},
    {"down": True},  # cleared = a broker restart on the same port, its store kept
    {"blackhole": True},
    {"reset": True},
    {"garbage": True},
)


@dataclass
class Ledger:
    """Every send's outcome: what must be stored, what failed, how long each took.

    Acknowledged msg ids go to a file, not to memory: a set of them would grow with the
    run and hide (or fake) a leak in the producer's own memory trend."""

    budget_ms: float
    ids_file: IO[str]
    acknowledged: int = 0
    sent: Counter[str] = field(default_factory=Counter)
    failures: Counter[str] = field(default_factory=Counter)
    hung: list[dict[str, Any]] = field(default_factory=list)
    hung_count: int = 0
    slowest_over_budget_ms: float = -1e9

    def timed(self, kind: str, started: float) -> None:
        elapsed_ms = (time.monotonic() - started) * 1000
        over = elapsed_ms - self.budget_ms
        self.slowest_over_budget_ms = max(self.slowest_over_budget_ms, over)
        self.sent[kind] += 1
        if over > 100 and len(self.hung) < 100:  # the count is hung_count below
            self.hung.append({"kind": kind, "ms": round(elapsed_ms, 1)})
        if over > 100:
            self.hung_count += 1

    def ok(self, result: SendResult) -> None:
        ids = result.msg_ids
        self.acknowledged += len(ids)
        self.ids_file.write("\n".join(ids) + "\n")

    def acknowledged_ids(self) -> set[str]:
        self.ids_file.flush()
        with open(self.ids_file.name, encoding="ascii") as f:
            return {line.strip() for line in f if line.strip()}

    def failed(self, kind: str, error: ProducerError) -> None:
        self.failures[f"{kind} {type(error).__name__} {error.fate.value}"] += 1


async def send_mix(producer: Producer, ledger: Ledger, rate: float, stop: anyio.Event) -> None:
    """Each kind of send at ``rate / 5`` per second until ``stop``; async sends are
    awaited by their own tasks so that their durations count too."""
    async with anyio.create_task_group() as tg:
        for index, kind in enumerate(KINDS):
            tg.start_soon(_pace, producer, ledger, kind, rate / len(KINDS), stop, index)


async def _pace(
    producer: Producer, ledger: Ledger, kind: str, rate: float, stop: anyio.Event, key: int
) -> None:
    interval, next_at = 1.0 / rate, anyio.current_time()
    async with anyio.create_task_group() as tg:
        while not stop.is_set():
            tg.start_soon(_one, producer, ledger, kind, key)
            next_at += interval
            await anyio.sleep(max(next_at - anyio.current_time(), 0))


async def _one(producer: Producer, ledger: Ledger, kind: str, key: int) -> None:
    message = Message("Soak", b"soak-%d" % key, keys=[kind])
    started = time.monotonic()
    try:
        if kind == "sync":
            ledger.ok(await producer.send(message))
        elif kind == "async":
            ledger.ok(await producer.send_async(message))
        elif kind == "oneway":
            await producer.send_oneway(message)
        elif kind == "batch":
            ledger.ok(await producer.send_batch([message] * BATCH))
        else:
            ledger.ok(await producer.send(message, order_key=f"order-{key}"))
    except ProducerError as exc:
        ledger.failed(kind, exc)
    finally:
        ledger.timed(kind, started)


class FaultDriver:
    """Random faults, one broker at a time, and one name server outage per run."""

    def __init__(self, http_url: str, rng: random.Random) -> None:
        self.http_url = http_url
        self.rng = rng
        self.applied: list[dict[str, Any]] = []

    async def run(self, stop: anyio.Event, namesrv_outage_at_s: float) -> None:
        started = anyio.current_time()
        outage_done = False
        while not stop.is_set():
            broker, spec = self.rng.choice(BROKERS), self.rng.choice(FAULTS)
            hold_s = self.rng.uniform(1.0, 4.0)
            await self._put(f"/brokers/{broker}/fault", spec)
            self.applied.append(
                {
                    "at_s": round(anyio.current_time() - started, 1),
                    "broker": broker,
                    "fault": spec,
                    "for_s": round(hold_s, 1),
                }
            )
            with anyio.move_on_after(hold_s):
                await stop.wait()
            await self._delete(f"/brokers/{broker}/fault")
            if not outage_done and anyio.current_time() - started >= namesrv_outage_at_s:
                outage_done = True
                await self._put("/namesrv/fault", {"down": True})
                self.applied.append(
                    {
                        "at_s": round(anyio.current_time() - started, 1),
                        "namesrv": "down",
                        "for_s": 2.0,
                    }
                )
                with anyio.move_on_after(2.0):
                    await stop.wait()
                await self._delete("/namesrv/fault")
            with anyio.move_on_after(self.rng.uniform(0.5, 2.0)):  # healthy in between
                await stop.wait()

    async def _put(self, path: str, body: dict[str, Any]) -> None:
        await anyio.to_thread.run_sync(_http, "PUT", self.http_url + path, body)

    async def _delete(self, path: str) -> None:
        await anyio.to_thread.run_sync(_http, "DELETE", self.http_url + path, None)


def _http(method: str, url: str, body: dict[str, Any] | None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read() or b"null")


def stored_ids(http_url: str, topic: str) -> set[str]:
    listed = _http("GET", f"{http_url}/topics/{topic}/messages?limit=100000000", None)
    return {m["uniq_key"] for m in listed["messages"] if m["uniq_key"]}


def open_fds() -> dict[int, str]:
    """This process's open file descriptors and what each one is."""
    found = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            found[int(name)] = os.readlink(f"/proc/self/fd/{name}")
        except OSError:  # closed meanwhile (the listing's own fd among them)
            continue
    return found


def live_tasks() -> int:
    """Tasks alive now: asyncio's set, or trio's task tree."""
    if sniffio.current_async_library() == "asyncio":
        import asyncio

        return len(asyncio.all_tasks())
    import trio

    count, pending = 0, [trio.lowlevel.current_root_task()]
    while pending:
        task = pending.pop()
        if task is None:
            continue
        count += 1
        for nursery in task.child_nurseries:
            pending.extend(nursery.child_tasks)
    return count


async def sample(producer: Producer, samples: list[dict[str, Any]], stop: anyio.Event) -> None:
    """Once a second: RSS, traced Python memory, tasks, open fds, sends in flight."""
    started = anyio.current_time()
    while not stop.is_set():
        samples.append(
            {
                "t_s": round(anyio.current_time() - started, 2),
                "rss_mib": round(rss_bytes() / 2**20, 2),
                "traced_mib": round(tracemalloc.get_traced_memory()[0] / 2**20, 2),
                "tasks": live_tasks(),
                "fds": len(os.listdir("/proc/self/fd")),
                "in_flight": producer.in_flight,
            }
        )
        with anyio.move_on_after(1.0):
            await stop.wait()
