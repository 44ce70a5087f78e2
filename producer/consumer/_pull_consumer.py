"""``PullConsumer``: the caller assigns queues, seeks and pulls (aiokafka's
``AIOKafkaConsumer`` with ``assign``/``seek``/``getmany``; Java's
``DefaultLitePullConsumer`` in assign mode).

No rebalance: every pull carries its own subscription, so the queues are the caller's to
choose. It heartbeats as Java's ``DefaultLitePullConsumer`` does (``CONSUME_ACTIVELY``,
with its subscriptions, every 30 s and whenever it learns a route), so the broker knows
the group and creates its ``%RETRY%`` topic (``mqadmin consumerProgress`` works).

Two offsets per queue (docs/consuming.md 1.9): the *position*, where the next pull starts,
moves when a pull returns, and only if every pull of its round went well (a failed round
moves nothing, so nothing is skipped); the *handed-out* offset moves as messages are
given to the caller - all of a ``getmany``, one at a time from ``async for``. Nothing is
committed unless :meth:`PullConsumer.commit` is called, and it stores handed-out offsets
only, so a process that commits and stops never loses a message it did not see.
"""

from __future__ import annotations

import random
import ssl as ssl_module
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Literal, TypeVar

import anyio
from anyio.abc import TaskGroup

from producer._client.clock import Clock, LoopClock
from producer._client.keywords import takes_options
from producer._lifecycle import ENDED, AsyncLifecycle, exit_noting_cancel
from producer._remoting.codecs import DEFAULT_CODECS, BodyCodecs
from producer._remoting.namespace import unwrap_queue, wrap, wrap_queue
from producer._remoting.subscription import Subscription
from producer._remoting.validation import check_group
from producer._transport import ConnectionPool, current_runtime
from producer._types.consumer.received import ReceivedMessage
from producer._types.credentials import Credentials
from producer._types.message import MessageQueue
from producer.consumer._broker_api import BrokerApi
from producer.consumer._connect import Identity, open_api
from producer.consumer._options import (
    CONNECT_TIMEOUT_MS,
    MAX_PULL_MESSAGES,
    START_WORDS,
    OffsetReset,
    PullOptions,
)
from producer.consumer._pull_buffer import PullBuffer
from producer.consumer._pull_heartbeat import PullHeartbeat, serve_broker_requests
from producer.consumer._pull_offsets import not_stored_before, start_offset
from producer.consumer._pull_step import Pulled, PullRequest, pull_once
from producer.consumer._sql_filters import check_in_broker, parse_subscription, subscription_for
from producer.consumer._subscribe_checks import check_tag_expression
from producer.errors import InvalidOptionError, LocalProtocolError, ProducerError

__all__ = ["PullConsumer"]

_T = TypeVar("_T")
_P = PullOptions()  # the defaults, written once there
ITER_POLL_MS = 1000  # how long ``async for`` long-polls before pulling again


class PullConsumer(AsyncLifecycle):
    """Pull assigned queues yourself::

        async with PullConsumer("my-group", "127.0.0.1:9876") as consumer:
            consumer.assign(await consumer.queues("Orders"), "paid || refunded")
            await consumer.seek_to_beginning()
            batches = await consumer.getmany(timeout_ms=1000)   # {queue: [message, ...]}
            async for message in consumer:                       # or one at a time
                ...
            await consumer.commit()                              # only if you want to

    A queue without a position starts at the group's committed offset, or else - the
    group never committed on it, told apart from a committed 0 even on a 4.x broker - at
    ``auto_offset_reset`` (``"latest"``, Java's default: its end; ``"earliest"``: its
    first stored message; ``"last"`` and ``"first"``, PushConsumer's words, are the same).
    :meth:`commit` stores the offset after the last message
    handed out of each queue, never one only pulled into the buffer. An offset the
    queue no longer has moves to the broker's suggestion (logged), or raises
    :class:`~producer.errors.OffsetOutOfRangeError` with ``offset_out_of_range="raise"``.
    """

    #: Where compressed bodies find their LZ4/zstd libraries (a test seam, as
    #: ``PushConsumer.options.body_codecs``): the pull step decodes with these.
    body_codecs: BodyCodecs = DEFAULT_CODECS

    _kind = "consumer"
    #: The settings, built from the keywords (and checked) before ``__init__``'s body.
    options: PullOptions

    @takes_options(PullOptions, wiring=("credentials", "ssl", "clock", "rng"))
    def __init__(
        self,
        group: str,
        namesrv: str | list[str],
        *,
        auto_offset_reset: OffsetReset = _P.auto_offset_reset,
        offset_out_of_range: Literal["reset", "raise"] = _P.offset_out_of_range,
        max_pull_messages: int = MAX_PULL_MESSAGES,
        request_timeout_ms: float = _P.request_timeout_ms,
        credentials: Credentials | None = None,
        ssl: bool | ssl_module.SSLContext | None = None,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        connect_timeout_ms: float = CONNECT_TIMEOUT_MS,
        namespace: str | None = None,
    ) -> None:
        check_group(group)
        options = self.options  # built from the keywords above by @takes_options
        self.namespace = options.namespace
        group = wrap(self.namespace, group)  # topics too: queues() and assign() translate
        self.group = group
        self.auto_offset_reset = START_WORDS[options.auto_offset_reset]
        self._raise_out_of_range = options.offset_out_of_range == "raise"
        self._max_pull = options.max_pull_messages
        self._request_timeout_ms = options.request_timeout_ms
        self._who = Identity.of_tool(
            group, "pull", namesrv, credentials, ssl, options.connect_timeout_ms, self.namespace
        )
        self._clock = clock
        self._rng = rng or random.Random()
        self._pool: ConnectionPool | None = None
        self._api: BrokerApi | None = None
        self._positions: dict[MessageQueue, int | None] = {}
        self._subscriptions: dict[str, Subscription] = {}
        self._buffer = PullBuffer()  # for ``async for``; and what commit() stores
        self._tg: TaskGroup | None = None
        self._heartbeat: PullHeartbeat | None = None
        self._checked: set[str] = set()  # topics whose SQL92 filter a broker accepted

    def __repr__(self) -> str:
        state = self.state.value
        return f"PullConsumer({self.group!r}, {state}, queues={len(self._positions)})"

    # -- lifecycle -----------------------------------------------------------------------

    async def start(self) -> None:
        """Open the connections and start heartbeating; call :meth:`aclose` from the same
        task (``async with`` does: the heartbeat's task group insists on it)."""
        self._refuse_start()
        runtime = current_runtime()
        clock = self._clock or LoopClock(runtime.loop_time)
        self._pool, self._api = await open_api(
            runtime, self._who, clock, self._rng, serve_broker_requests
        )
        self._heartbeat = PullHeartbeat(
            self._api, self.auto_offset_reset, lambda: list(self._subscriptions.values())
        )
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._tg.start_soon(self._heartbeat.run)
        self._now_running()

    async def aclose(self) -> None:
        """Unregister from the brokers and close the connections; nothing is committed
        (call :meth:`commit` first)."""
        if not self._close_begins():
            return
        pool, self._pool, api, self._api = self._pool, None, self._api, None
        tg, self._tg = self._tg, None
        cancelled = None
        if tg is not None:  # heartbeats stop first: none may follow the unregister
            tg.cancel_scope.cancel()
            cancelled = await exit_noting_cancel(tg)
        if api is not None:
            with anyio.move_on_after(self._who.connect_timeout_ms / 1000.0, shield=True):
                await api.unregister(self._who.connect_timeout_ms)
        if pool is not None:
            cancelled = await exit_noting_cancel(pool) or cancelled
        self._now_closed()
        if cancelled is not None:  # the caller is being cancelled: closed, now say so
            raise cancelled

    # -- queues --------------------------------------------------------------------------

    async def queues(self, topic: str) -> list[MessageQueue]:
        """The topic's readable queues, fresh from a name server (new queues show up)."""
        found = await self._open().refresh(wrap(self.namespace, topic))
        self._want_heartbeat()  # perhaps a broker not greeted yet
        return [self._user(q) for q in found.queues]

    def assign(
        self, queues: Iterable[MessageQueue], expression: str = "*", *, sql: str | None = None
    ) -> None:
        """Pull exactly these queues from now on, keeping the positions of those already
        held; ``expression`` (``"TagA || TagB"``, ``*`` for all) filters their topics (one
        that cannot be tags, such as ``"a > 5"``, raises InvalidOptionError), or
        ``sql="a > 5 AND b = 'x'"`` by properties (checked with a broker before the
        first pull of the topic, as a push consumer's start does)."""
        check_tag_expression(expression, "assign")
        chosen = list(dict.fromkeys(map(self._wire, queues)))
        for topic in {q.topic for q in chosen}:
            self._subscriptions[topic] = subscription_for(topic, expression, sql)
            self._checked.discard(topic)
        if self._api is not None:  # queues let go no longer keep the reader degraded
            for queue in set(self._positions) - set(chosen):
                self._api.nodes.forget(queue)
        self._positions = {q: self._positions.get(q) for q in chosen}
        self._buffer.keep(self._positions)
        self._want_heartbeat()

    def assignment(self) -> list[MessageQueue]:
        """The queues this consumer pulls."""
        return [self._user(q) for q in self._positions]

    # -- positions -----------------------------------------------------------------------

    def seek(self, queue: MessageQueue, offset: int) -> None:
        """Pull ``queue`` from ``offset`` next."""
        queue = self._wire(queue)
        self._held(queue)
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise InvalidOptionError(f"offset must be an int >= 0, got {offset!r}")
        self._positions[queue] = offset
        self._buffer.moved(queue, offset)

    async def seek_to_beginning(self, *queues: MessageQueue) -> None:
        """To each queue's first stored offset (GET_MIN_OFFSET); all assigned by default."""
        for queue, offset in (await self.beginning_offsets(self._chosen(queues))).items():
            self.seek(queue, offset)

    async def seek_to_end(self, *queues: MessageQueue) -> None:
        """Past each queue's last message (GET_MAX_OFFSET): only new messages come."""
        for queue, offset in (await self.end_offsets(self._chosen(queues))).items():
            self.seek(queue, offset)

    async def seek_to_time(self, timestamp_ms: int, *queues: MessageQueue) -> None:
        """To the first message stored at or after ``timestamp_ms`` (see
        :meth:`offsets_for_time`)."""
        found = await self.offsets_for_time(self._chosen(queues), timestamp_ms)
        for queue, offset in found.items():
            self.seek(queue, offset)

    async def position(self, queue: MessageQueue) -> int:
        """The offset the next pull of ``queue`` starts at (resolved now if unknown)."""
        queue = self._wire(queue)
        self._held(queue)
        found = self._positions[queue]
        if found is None:
            api = await self._routed([queue])
            found = await start_offset(api, queue, self.auto_offset_reset)
            self._positions[queue] = found
            self._buffer.moved(queue, found)
        return found

    async def beginning_offsets(self, queues: Iterable[MessageQueue]) -> dict[MessageQueue, int]:
        """Each queue's first stored offset (GET_MIN_OFFSET)."""
        wire = [self._wire(q) for q in queues]
        api = await self._routed(wire)
        return {self._user(q): await api.min_offset(q) for q in wire}

    async def end_offsets(self, queues: Iterable[MessageQueue]) -> dict[MessageQueue, int]:
        """Each queue's offset past its last message (GET_MAX_OFFSET)."""
        wire = [self._wire(q) for q in queues]
        api = await self._routed(wire)
        return {self._user(q): await api.max_offset(q) for q in wire}

    async def offsets_for_time(
        self, queues: Iterable[MessageQueue], timestamp_ms: int
    ) -> dict[MessageQueue, int]:
        """Per queue, the offset of the first message stored at or after ``timestamp_ms``
        (the end offset when there is none). The broker's SEARCH_OFFSET_BY_TIMESTAMP
        answers the message stored *closest* to the time, possibly just before it; that
        one is looked at and stepped over. Messages stored within the same millisecond
        may be answered from the middle (a 4.9.4 broker's binary search)."""
        wire = [self._wire(q) for q in queues]
        api = await self._routed(wire)
        found: dict[MessageQueue, int] = {}
        for queue in wire:
            offset = await api.search_offset(queue, timestamp_ms)
            found[self._user(queue)] = await not_stored_before(
                api, queue, offset, timestamp_ms, self._ask(0, 1)
            )
        return found

    async def committed(self, queue: MessageQueue) -> int | None:
        """The group's committed offset of ``queue``, or ``None`` if it never committed
        one (a 4.x broker's ambiguous 0 is checked, docs/consuming.md 1.8)."""
        queue = self._wire(queue)
        return await (await self._routed([queue])).query_offset(queue)

    async def commit(self, offsets: Mapping[MessageQueue, int] | None = None) -> None:
        """UPDATE_CONSUMER_OFFSET for the group: ``offsets``, or for every queue the offset
        after the last message handed out (the next one to read, as Java commits) -
        messages pulled but still buffered for ``async for`` do not count."""
        if offsets is None:
            offsets = dict(self._buffer.handed)
        offsets = {self._wire(q): o for q, o in offsets.items()}
        api = await self._routed(offsets)
        for queue, offset in offsets.items():
            await api.persist(queue, offset, oneway=False)

    # -- pulling -------------------------------------------------------------------------

    async def getmany(
        self, *queues: MessageQueue, timeout_ms: float = 0, max_records: int | None = None
    ) -> dict[MessageQueue, list[ReceivedMessage]]:
        """One pull of each queue (all assigned by default; at most ``max_records`` messages
        per queue), at once. When none has anything and ``timeout_ms > 0``, the broker
        holds the pulls (long polling) until a message arrives or the time is up. Queues
        without messages are left out."""
        chosen = self._chosen(queues)
        if self._buffer:
            return self._keyed_for_user(self._buffer.take(chosen, max_records))
        for suspend_ms in (0, int(timeout_ms)) if timeout_ms > 0 else (0,):
            found = await self._round(chosen, suspend_ms, max_records)
            for pulled in found.values():
                self._buffer.handed_all(pulled)
            if any(p.messages for p in found.values()):
                break
        return self._keyed_for_user({q: p.messages for q, p in found.items() if p.messages})

    async def pull_records(self, queue: MessageQueue) -> bytes:
        """One pull of ``queue`` at its position, undecoded: the broker's commit-log
        records back to back (``b""`` when there were none), the position moved past them
        as :meth:`getmany` would. For bulk decoders (the Spark source builds Arrow columns
        straight from them), which must do what ``getmany`` does per message themselves:
        re-check the tag, inflate bodies and refuse one that does not inflate
        (:func:`~producer.consumer.decode_records` with ``codecs=consumer.body_codecs``),
        and unwrap a namespaced topic. Not to be mixed with ``async for`` on the same queue."""
        position = await self.position(queue)
        queue = self._wire(queue)
        api = await self._routed([queue])
        await self._check_filters(api, {queue.topic})
        ask = replace(self._ask(0, None), decode=False)
        pulled = await pull_once(api, queue, position, self._sub(queue), ask)
        self._positions[queue] = pulled.position
        self._buffer.handed_all(pulled)
        return pulled.records

    def _keyed_for_user(self, found: dict[MessageQueue, _T]) -> dict[MessageQueue, _T]:
        return found if self.namespace is None else {self._user(q): v for q, v in found.items()}

    def __aiter__(self) -> PullConsumer:
        return self

    async def __anext__(self) -> ReceivedMessage:
        while not self._buffer:
            if self.state in ENDED:
                raise StopAsyncIteration
            for pulled in (await self._round(self._chosen(()), ITER_POLL_MS, None)).values():
                self._buffer.add(pulled)
        return self._buffer.pop()

    async def _round(
        self, queues: list[MessageQueue], suspend_ms: int, max_records: int | None
    ) -> dict[MessageQueue, Pulled]:
        """Pull every queue concurrently; positions move only if all pulls went well (an
        error is raised and every queue is pulled again next time: nothing is lost).
        Long-polled, the first queue to answer with messages ends the round."""
        api = await self._routed(queues)
        await self._check_filters(api, {q.topic for q in queues})
        starts = {q: await self.position(q) for q in queues}
        results: dict[MessageQueue, Pulled] = {}
        errors: list[ProducerError] = []
        ask = self._ask(suspend_ms, max_records)
        async with anyio.create_task_group() as tg:

            async def pull(queue: MessageQueue) -> None:
                try:
                    pulled = await pull_once(api, queue, starts[queue], self._sub(queue), ask)
                    results[queue] = pulled
                except ProducerError as exc:
                    errors.append(exc)
                    tg.cancel_scope.cancel()
                    return
                if suspend_ms and pulled.messages:
                    tg.cancel_scope.cancel()

            for queue in queues:
                tg.start_soon(pull, queue)
        if errors:
            raise errors[0]
        for queue, pulled in results.items():
            self._positions[queue] = pulled.position
        return results

    def _ask(self, suspend_ms: int, max_records: int | None) -> PullRequest:
        return PullRequest(
            group=self.group,
            max_messages=min(self._max_pull, max_records or self._max_pull),
            suspend_ms=suspend_ms,
            request_timeout_ms=self._request_timeout_ms,
            suspend=suspend_ms > 0,
            raise_out_of_range=self._raise_out_of_range,
            namespace=self.namespace,
            codecs=self.body_codecs,
        )

    # -- helpers -------------------------------------------------------------------------

    async def _routed(self, queues: Iterable[MessageQueue]) -> BrokerApi:
        """The API, with a route for every topic among ``queues``."""
        api = self._open()
        for topic in {q.topic for q in queues}:
            if api.cached(topic) is None:
                await api.refresh(topic)
                self._want_heartbeat()
        return api

    def _want_heartbeat(self) -> None:
        if self._heartbeat is not None:
            self._heartbeat.want()

    async def _check_filters(self, api: BrokerApi, topics: set[str]) -> None:
        """A SQL92 filter a broker cannot compile would filter nothing: check it first."""
        pending = sorted(topics - self._checked)
        await check_in_broker(api, [self._subscriptions[t] for t in pending], {})
        self._checked |= topics

    def _sub(self, queue: MessageQueue) -> Subscription:
        found = self._subscriptions.get(queue.topic)
        if found is None:
            found = self._subscriptions[queue.topic] = parse_subscription(queue.topic, "*")
        return found

    def _wire(self, queue: MessageQueue) -> MessageQueue:
        return wrap_queue(self.namespace, queue)

    def _user(self, queue: MessageQueue) -> MessageQueue:
        return unwrap_queue(queue, self.namespace)

    def _chosen(self, queues: tuple[MessageQueue, ...]) -> list[MessageQueue]:
        queues = tuple(map(self._wire, queues))
        for queue in queues:
            self._held(queue)
        return list(queues) if queues else list(self._positions)

    def _held(self, queue: MessageQueue) -> None:
        if queue not in self._positions:
            raise LocalProtocolError(f"{queue} is not assigned: assign() it first")

    def _open(self) -> BrokerApi:
        if self._api is None:
            raise self._not_running()
        return self._api
