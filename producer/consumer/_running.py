"""What a started push consumer runs on: built in one piece by ``start``, never half there.

Before ``start`` none of it exists; so the consumer holds one :class:`Running` (or None,
before ``start``) where it would otherwise hold seven attributes that may each be None,
and hands it to each step of its life (rebalance, heartbeat, persist, close).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import anyio
from anyio.abc import TaskGroup

from producer._client.clock import Clock
from producer._consume.offsets import OffsetTable
from producer._remoting.consumer_requests import MessageModel
from producer._remoting.request_table import RequestHandler
from producer._transport import ConnectionPool, Runtime
from producer.consumer._broker_api import BrokerApi
from producer.consumer._concurrent import ConcurrentConsumption
from producer.consumer._connect import Identity, open_api
from producer.consumer._listener import Listener, ListenerCall
from producer.consumer._offset_stores import BrokerOffsets, LocalOffsets, OffsetStore
from producer.consumer._options import ConsumerOptions
from producer.consumer._orderly import OrderlyConsumption
from producer.consumer._telemetry import ConsumerTelemetry, LagSource


@dataclass(frozen=True, slots=True)
class Running:
    """A started consumer's connections, task group, offset store and consumption."""

    pool: ConnectionPool
    api: BrokerApi
    store: OffsetStore
    tg: TaskGroup
    call: ListenerCall
    consumption: ConcurrentConsumption | OrderlyConsumption
    clock: Clock


async def start_running(
    runtime: Runtime,
    who: Identity,
    clock: Clock,
    rng: random.Random,
    serve: RequestHandler,
    *,
    options: ConsumerOptions,
    listener: Listener,
    offsets: OffsetTable,
    offset_dir: Path,
    lag: LagSource,
) -> Running:
    """Open the connections and the task group; the store is opened by the caller."""
    pool, api = await open_api(runtime, who, clock, rng, serve)
    store: OffsetStore
    if options.model is MessageModel.BROADCASTING:
        store = LocalOffsets(offset_dir, who.client_id, who.group)
    else:
        store = BrokerOffsets(api)
    tg = anyio.create_task_group()
    await tg.__aenter__()
    kind = OrderlyConsumption if options.orderly else ConcurrentConsumption
    telemetry = ConsumerTelemetry(who.group)
    telemetry.watch_lag(lag)
    call = ListenerCall(
        listener,
        options.max_concurrency,
        telemetry=telemetry,
        clock_ms=clock.monotonic_ms,
        guard=options.guard(),
    )
    consumption = kind(
        call, api=api, offsets=offsets, options=options, tg=tg, now_ms=clock.monotonic_ms
    )
    return Running(pool, api, store, tg, call, consumption, clock)
