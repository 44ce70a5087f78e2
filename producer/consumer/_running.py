"""What a started push consumer runs on: built in one piece by ``start``, never half there.

Before ``start`` none of it exists; so the consumer holds one :class:`StartedPush` (or None,
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
from producer._client.host import shared_uniq_key_generator
from producer._client.routes import RouteTable
from producer._consume.offsets import OffsetTable
from producer._remoting.consumer_requests import MessageModel
from producer._remoting.namespace import unwrap
from producer._remoting.request_table import RequestHandler
from producer._trace.dispatcher import TraceDispatcher, trace_group
from producer._trace.records import ConsumeTrace
from producer._trace.sender import TraceSender
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
class StartedPush:
    """A started consumer's connections, task group, offset store and consumption."""

    pool: ConnectionPool
    api: BrokerApi
    store: OffsetStore
    tg: TaskGroup
    call: ListenerCall
    consumption: ConcurrentConsumption | OrderlyConsumption
    clock: Clock
    trace: TraceDispatcher | None = None  # message trace, when on


async def start_push(
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
    trace_topic: str | None = None,
) -> StartedPush:
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
    trace = None if trace_topic is None else await _start_trace(api, clock, rng, trace_topic)
    call = ListenerCall(
        listener,
        options.max_concurrency,
        telemetry=telemetry,
        clock_ms=clock.monotonic_ms,
        guard=options.guard(),
        trace=None
        if trace is None
        else _consume_trace(trace, unwrap(who.group, who.namespace), clock),
    )
    consumption = kind(
        call, api=api, offsets=offsets, options=options, tg=tg, now_ms=clock.monotonic_ms
    )
    return StartedPush(pool, api, store, tg, call, consumption, clock, trace)


async def _start_trace(
    api: BrokerApi, clock: Clock, rng: random.Random, topic: str
) -> TraceDispatcher:
    """The consumer's trace dispatcher, sending on its connections with routes of its own
    that, as Java's inner trace producer, go through ``TBW102`` to a topic not created."""
    routes = RouteTable(api.routes.namesrv_addrs, api.client, clock, rng, auto_create_topic=True)
    uniq_keys = shared_uniq_key_generator()
    group = trace_group(api.group, "CONSUME")
    send = TraceSender(group, client=api.client, routes=routes, clock=clock, uniq_keys=uniq_keys)
    dispatcher = TraceDispatcher(send, topic)
    await dispatcher.start()
    return dispatcher


def _consume_trace(dispatcher: TraceDispatcher, group: str, clock: Clock) -> ConsumeTrace:
    request_ids = shared_uniq_key_generator()
    return ConsumeTrace(
        dispatcher.append, group, wall_ms=clock.wall_ms, request_id=request_ids.next_id
    )
