"""``PushConsumer``: subscribe, and a listener is called with the messages that arrive.

Lifecycle: ``start`` fetches routes, heartbeats (the broker creates ``%RETRY%<group>``)
and rebalances; background loops then rebalance (every 20 s and on
NOTIFY_CONSUMER_IDS_CHANGED), heartbeat (30 s), persist offsets (5 s) and, orderly,
renew the broker's queue locks (20 s). ``aclose`` stops pulling, lets batches in flight
finish within ``close_timeout_ms``, persists offsets, unlocks and unregisters. The
rebalance decides which queues are this member's; holding or letting go of one (locks,
start offsets, hand-over) is ``_held_queues``.
"""

from __future__ import annotations

import logging
import os
import random
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import anyio

from producer._client.clock import Clock, LoopClock
from producer._client.host import local_ipv4
from producer._client.keywords import takes_options
from producer._client.routes import parse_namesrv
from producer._consume.offsets import OffsetTable
from producer._lifecycle import AsyncLifecycle, exit_noting_cancel
from producer._remoting.acl import signer_for
from producer._remoting.allocate import allocate_averagely
from producer._remoting.command import RemotingCommand
from producer._remoting.consumer_requests import ConsumerData, MessageModel
from producer._remoting.namespace import check_namespace, namespaced_group, wrap
from producer._remoting.request_codes import RequestCode
from producer._remoting.request_table import not_supported
from producer._remoting.retry_topics import retry_topic
from producer._remoting.subscription import Subscription
from producer._remoting.validation import check_group
from producer._trace.records import trace_topic
from producer._transport import current_runtime
from producer._transport.base import client_tls
from producer._types.consumer.retry_policy import ConsumeRetryPolicy
from producer._types.credentials import Credentials
from producer._types.lifecycle_state import LifecycleState
from producer._types.message import MessageQueue
from producer.consumer._concurrent import ConcurrentConsumption
from producer.consumer._connect import Identity
from producer.consumer._held_queues import HeldQueues
from producer.consumer._listener import Listener
from producer.consumer._offset_stores import DEFAULT_OFFSET_DIR
from producer.consumer._options import DEFAULT_OPTIONS as _C
from producer.consumer._options import ConsumerOptions
from producer.consumer._route_watch import RouteWatch
from producer.consumer._running import StartedPush, start_push
from producer.consumer._sql_filters import check_in_broker, parse_subscription, subscription_for
from producer.consumer._subscribe_checks import check_subscription
from producer.errors import InvalidOptionError, LocalProtocolError, ProducerError

log = logging.getLogger("producer.consumer")

_T = TypeVar("_T")


class PushConsumer(AsyncLifecycle):
    """A push consumer of one group (clustering by default).

    ``listener(messages)`` or ``listener(messages, context)`` - plain or ``async`` -
    returns :class:`ConsumeStatus`; an exception counts as RECONSUME_LATER. Plain
    functions run in worker threads (up to ``max_concurrency`` at once), so they may block.
    ``orderly=True`` consumes each queue in order, one batch at a time, under the broker's
    queue lock; RECONSUME_LATER then pauses the queue and retries locally.
    ``trace`` (``True``, or a topic name) writes a message trace record pair (SubBefore,
    SubAfter) for every message of every listener call, as Java's ``enableMsgTrace``.
    """

    _kind = "consumer"
    #: The settings, built from the keywords (and checked) before ``__init__``'s body.
    options: ConsumerOptions

    @takes_options(
        ConsumerOptions,
        wiring=(
            "listener", "instance_name", "namespace", "offset_store_dir", "credentials",
            "ssl", "trace", "clock", "rng",
        ),
    )  # fmt: skip
    def __init__(
        self,
        group: str,
        namesrv: str | list[str],
        *,
        listener: Listener | None = None,
        model: str = "clustering",
        consume_from: str | int = "last",
        instance_name: str | None = None,
        namespace: str | None = None,
        offset_store_dir: str | os.PathLike[str] | None = None,
        credentials: Credentials | None = None,
        ssl: object = None,
        trace: bool | str = False,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        orderly: bool = _C.orderly,
        consume_batch_size: int = _C.consume_batch_size,
        pull_batch_size: int = _C.pull_batch_size,
        max_concurrency: int = _C.max_concurrency,
        max_reconsume_times: int | None = None,  # 16; orderly: for ever (Java's defaults)
        retry_policy: ConsumeRetryPolicy | None = None,
        idempotency_window_ms: float | None = _C.idempotency_window_ms,
        idempotency_max_ids: int = _C.idempotency_max_ids,
        max_cached_messages: int = _C.flow.max_messages,
        max_cached_bytes: int = _C.flow.max_bytes,
        max_span: int = _C.flow.max_span,
        suspend_timeout_ms: int = _C.suspend_timeout_ms,
        pull_retry_delay_ms: float = _C.pull_retry_delay_ms,
        suspend_current_queue_time_ms: int = _C.suspend_current_queue_time_ms,
        lock_interval_ms: float = _C.lock_interval_ms,
        flow_control_delay_ms: float = _C.flow_control_delay_ms,
        local_retry_delay_ms: float = _C.local_retry_delay_ms,
        persist_interval_ms: float = _C.persist_interval_ms,
        rebalance_interval_ms: float = _C.rebalance_interval_ms,
        heartbeat_interval_ms: float = _C.heartbeat_interval_ms,
        close_timeout_ms: float = _C.close_timeout_ms,
        consume_timeout_ms: float = _C.consume_timeout_ms,
        connect_timeout_ms: float = _C.connect_timeout_ms,
    ) -> None:
        check_group(group, role="consumer")
        self.namespace = check_namespace(namespace)
        self.group = group = namespaced_group(namespace, group)  # as getConsumerGroup()
        self.namesrv_addrs = parse_namesrv(namesrv)
        self.listener = listener
        broadcasting = self.options.model is MessageModel.BROADCASTING
        # Java keeps "DEFAULT" for broadcasting, so its offsets file is found again after
        # a restart; clustering members take the pid to be told apart.
        instance = instance_name or ("DEFAULT" if broadcasting else str(os.getpid()))
        self.client_id = f"{local_ipv4()}@{instance}"
        self._offset_dir = Path(offset_store_dir) if offset_store_dir else DEFAULT_OFFSET_DIR
        self._signer = signer_for(credentials)
        self._tls = client_tls(ssl)
        self._trace_topic = trace_topic(trace)
        self._given_clock = clock
        self._rng = rng or random.Random()
        self._subscriptions: dict[str, Subscription] = {}
        self._versions: dict[str, int] = {}
        self.offsets = OffsetTable()
        self._held = HeldQueues(
            group,
            lambda: self.options,
            self.offsets,
            self._subscriptions,
            self._versions.__getitem__,
        )
        self._rebalance_wanted = anyio.Event()
        self._routes = RouteWatch(group)
        self._running: StartedPush | None = None  # built by start(), kept after aclose()

    def __repr__(self) -> str:
        return (
            f"PushConsumer({self.group!r}, {self.state.value}, "
            f"topics={sorted(self._subscriptions)}, queues={len(self._held.workers)})"
        )

    # -- set-up --------------------------------------------------------------------------

    def subscribe(self, topic: str, expression: str = "*", *, sql: str | None = None) -> None:
        """Consume ``topic``'s messages whose tag is in ``"TagA || TagB"`` (``*``: all),
        or, with ``sql="a > 5 AND b = 'x'"``, those whose properties the broker's SQL92
        filter accepts (a broker with ``enablePropertyFilter=true``; checked at start).

        An invalid topic name or a tag expression that cannot be one (``"a > 5"``: use
        ``sql=`` for property filters) raises InvalidOptionError here."""
        if self.state is not LifecycleState.NEW:
            raise LocalProtocolError("subscribe() before start()")
        check_subscription(topic, expression)
        topic = wrap(self.namespace, topic)  # nsA%topic on the wire (Java's withNamespace)
        self._subscriptions[topic] = subscription_for(topic, expression, sql)

    @property
    def assigned_queues(self) -> list[MessageQueue]:
        """The queues rebalancing gave this consumer, sorted by topic, broker and id."""
        return sorted(self._held.workers, key=lambda q: (q.topic, q.broker_name, q.queue_id))

    @property
    def stats(self) -> dict[str, int]:
        """Counters so far: messages consumed, sent back for retry, in flight, and more
        (``flow_waits``: pulls of the queues held now that flow control delayed)."""
        r = self._running
        return {
            "consumed": 0 if r is None else r.consumption.consumed,
            "sent_back": 0 if r is None else r.consumption.sent_back,
            "in_flight": 0 if r is None else r.consumption.in_flight,
            "held": sum(len(w.pq) for w in self._held.workers.values()),
            "duplicates_dropped": 0 if r is None else r.call.duplicates,
            "lag": sum(w.lag() for w in self._held.workers.values()),
            "flow_waits": sum(w.flow_waits for w in self._held.workers.values()),
        }

    async def start(self) -> None:
        """Check the set-up (a listener, a subscription), connect and start rebalancing and
        pulling; ``async with`` calls it."""
        self._refuse_start()
        if self.listener is None:
            raise InvalidOptionError("no listener: PushConsumer(..., listener=fn)")
        if not self._subscriptions:
            raise InvalidOptionError("nothing subscribed: call subscribe(topic) before start()")
        if self.options.model is MessageModel.CLUSTERING:
            self._subscriptions.setdefault(
                retry_topic(self.group), parse_subscription(retry_topic(self.group), "*")
            )
        r = self._running = await self._open(self.listener)
        r.api.on_new_replicas = lambda addrs: r.api.heartbeat(self._consumer_data(), addrs)
        self._now_running()
        try:
            await r.store.open()  # a damaged local offsets file fails here, loudly
        except BaseException:
            await self.aclose()
            raise
        for topic in self._subscriptions:
            self._versions[topic] = r.clock.wall_ms()
        try:  # no name server answering, or a filter the broker refuses, stops the start
            await self._routes.refresh(r.api, self._subscriptions, at_start=True)
            await check_in_broker(r.api, self._subscriptions.values(), self._versions)
        except BaseException:
            await self.aclose()
            raise
        await r.api.heartbeat(self._consumer_data())
        await self._rebalance(r)
        r.tg.start_soon(self._rebalance_loop, r)
        r.tg.start_soon(self._routes.run, r.api, lambda: self._route_found(r))
        r.tg.start_soon(self._every, self.options.heartbeat_interval_ms, self._heartbeat, r)
        r.tg.start_soon(self._every, self.options.persist_interval_ms, self._persist, r)
        if self._held.needs_locks:
            r.tg.start_soon(self._every, self.options.lock_interval_ms, self._held.lock_all, r)
        if isinstance(r.consumption, ConcurrentConsumption):
            sweep_ms = self.options.consume_timeout_ms
            r.tg.start_soon(self._every, sweep_ms, self._sweep, r.consumption)

    async def _open(self, listener: Listener) -> StartedPush:
        runtime = current_runtime()
        who = Identity(
            self.group,
            self.client_id,
            self.namesrv_addrs,
            self._signer,
            self._tls,
            self.options.connect_timeout_ms,
            self.namespace,
        )
        return await start_push(
            runtime,
            who,
            self._given_clock or LoopClock(runtime.loop_time),
            self._rng,
            self._serve,
            options=self.options,
            listener=listener,
            offsets=self.offsets,
            offset_dir=self._offset_dir,
            lag=lambda: [(q, w.lag()) for q, w in self._held.workers.items()],
            trace_topic=self._trace_topic,
        )

    def _serve(self, address: str, request: RemotingCommand) -> RemotingCommand | None:
        """Requests the broker starts: NOTIFY_CONSUMER_IDS_CHANGED asks for a rebalance."""
        if request.code == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED:
            self._rebalance_wanted.set()
            return None
        return not_supported(address, request)

    def _consumer_data(self) -> ConsumerData:
        return ConsumerData(
            self.group,
            self.options.model,
            self.options.consume_from,
            tuple(self._subscriptions.values()),
            dict(self._versions),
        )

    # -- background ----------------------------------------------------------------------
    # Every step below runs while the consumer is started, so each takes its running
    # state as an argument rather than re-checking an attribute that may be None.

    async def _every(
        self, interval_ms: float, job: Callable[[_T], Awaitable[None]], arg: _T
    ) -> None:
        while True:
            await anyio.sleep(interval_ms / 1000.0)
            try:
                await job(arg)
            except ProducerError as exc:
                log.warning("%s: %s failed: %s", self.group, job, exc)

    async def _heartbeat(self, r: StartedPush) -> None:
        await self._refresh_routes(r)
        await r.api.heartbeat(self._consumer_data())

    async def _persist(self, r: StartedPush, *, final: bool = False) -> None:
        await r.store.persist(self.offsets.to_persist(set(self._held.workers)), final=final)

    async def _sweep(self, consumption: ConcurrentConsumption) -> None:
        await consumption.sweep_expired([w.pq for w in self._held.workers.values()])

    def _needs_locks(self) -> bool:
        return self.options.orderly and self.options.model is MessageModel.CLUSTERING

    async def _rebalance_loop(self, r: StartedPush) -> None:
        while True:
            with anyio.move_on_after(self.options.rebalance_interval_ms / 1000.0):
                await self._rebalance_wanted.wait()
            self._rebalance_wanted = anyio.Event()
            if await self._refresh_routes(r):
                await r.api.heartbeat(self._consumer_data())  # new brokers learn of us
            await self._rebalance(r)

    async def _refresh_routes(self, r: StartedPush) -> bool:
        """Fetch every subscribed topic's route; True if one that was missing appeared."""
        return await self._routes.refresh(r.api, self._subscriptions)

    async def _route_found(self, r: StartedPush) -> None:
        """A missing topic appeared: its brokers learn of us, then we rebalance at once."""
        await r.api.heartbeat(self._consumer_data())
        self._rebalance_wanted.set()

    # -- rebalance -----------------------------------------------------------------------

    async def _rebalance(self, r: StartedPush) -> None:
        changed = False
        for topic in list(self._subscriptions):
            try:
                changed |= await self._rebalance_topic(r, topic)
            except ProducerError as exc:
                log.info("%s: rebalance of %s skipped: %s", self.group, topic, exc)
        if changed:
            await r.api.heartbeat(self._consumer_data())
        # Pulls start once the broker knows the new subscription version: Java starts
        # them first, and their first pull is refused (25, not latest) and retried in 3 s.
        starting, self._held.starting = self._held.starting, []
        for worker in starting:
            if not worker.pq.dropped:
                r.tg.start_soon(worker.run)

    async def _rebalance_topic(self, r: StartedPush, topic: str) -> bool:
        queues = r.api.cached(topic)
        if queues is None:
            return False
        if self.options.model is MessageModel.BROADCASTING:
            mine = set(queues.queues)
        else:
            members = await r.api.consumer_ids(topic)
            if not members:
                return False
            mine = set(allocate_averagely(queues.queues, members, self.client_id))
        current = {q for q in self._held.workers if q.topic == topic}
        for queue in current - mine:
            await self._held.give_up(r, queue)
        added = [q for q in mine - current if await self._held.take(r, q)]
        now_held = {q for q in self._held.workers if q.topic == topic}
        if now_held != current:
            self._versions[topic] = max(r.clock.wall_ms(), self._versions[topic] + 1)
        return bool(added) or now_held != current

    # -- shutdown ------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Stop pulling, finish batches in flight (up to ``close_timeout_ms``), commit
        offsets (waiting for the broker's answer), unregister, close connections."""
        r = self._running
        if not self._close_begins() or r is None:  # closed already, or never started
            return
        for worker in self._held.workers.values():
            worker.stop()
        timeout_s = self.options.close_timeout_ms / 1000.0
        with anyio.move_on_after(timeout_s, shield=True):
            await r.consumption.wait_idle()
        for worker in self._held.workers.values():
            worker.pq.dropped = True  # anything still running is discarded, not committed
        with anyio.move_on_after(timeout_s, shield=True):
            await self._persist(r, final=True)
            if self._held.needs_locks:
                await self._held.unlock_all(r)
            await r.api.unregister(self.options.connect_timeout_ms)
        if r.trace is not None:  # the last calls' records, before the connections close
            await r.trace.aclose(self.options.close_timeout_ms)
        r.tg.cancel_scope.cancel()
        cancelled = await exit_noting_cancel(r.tg)
        cancelled = await exit_noting_cancel(r.pool) or cancelled
        self._held.workers.clear()
        self._now_closed()
        if cancelled is not None:  # the caller is being cancelled: closed, now say so
            raise cancelled
