"""``SimpleConsumer``: RocketMQ 5's pop consumption over remoting, straight to 5.x brokers
(the names of rocketmq-clients' ``SimpleConsumer``; docs/consuming.md 6.3).

No rebalance, no queue locks, no offsets kept by the client: :meth:`SimpleConsumer.receive`
gathers up to ``max_messages`` messages from the brokers of the subscribed topics (each
pop asks one broker for every queue of one topic, for what is still wanted), which each
broker then hides from every other consumer of the group for ``invisible_duration_ms``.
The caller :meth:`~SimpleConsumer.ack`\\ s each one, or moves its deadline with
:meth:`~SimpleConsumer.change_invisible_duration` (which returns the message to ack); a message
not acked in time is delivered again (at least once), through the group's pop retry
topic. Any number of consumers may share the topic's queues.

The first request to a broker learns its version; a broker older than 5.0 raises
:class:`~producer.errors.PopUnsupportedError` before anything is popped. What an ack or a
change may do is decided by the pure core (:func:`producer._consume.pop.decide`), then
sent.
"""

from __future__ import annotations

import logging
import random
import ssl as ssl_module
from collections import deque
from collections.abc import Sequence

from producer._client.clock import Clock, LoopClock
from producer._client.keywords import takes_options
from producer._consume.pop import PopTiming, decide, popped_messages
from producer._lifecycle import ENDED, AsyncLifecycle
from producer._remoting.pop_batch_ack import batch_ack_request
from producer._remoting.pop_requests import (
    MAX_POP_MESSAGES,
    InitMode,
    PopParams,
    ack_request,
    change_invisible_request,
    check_ack,
    parse_change_response,
    parse_message_type,
    parse_pop_response,
    pop_request,
    topic_config_request,
)
from producer._remoting.producer_requests import max_offset_request
from producer._remoting.request_codes import POP_BROKER_VERSION, V5_2_0, version_name
from producer._remoting.validation import check_group
from producer._transport import ConnectionPool, current_runtime
from producer._types.consumer.popped import PoppedMessage, Receipt, ReceiptState
from producer._types.credentials import Credentials
from producer.consumer._broker_api import HOUSEKEEPING_TIMEOUT_MS, BrokerApi, TopicQueues
from producer.consumer._connect import Identity, open_api
from producer.consumer._options import (
    AWAIT_DURATION_MS,
    CONNECT_TIMEOUT_MS,
    SimpleOptions,
    check_int,
    check_invisible,
)
from producer.consumer._sql_filters import parse_subscription
from producer.errors import (
    BrokerError,
    InvalidOptionError,
    LocalProtocolError,
    PopUnsupportedError,
    ProducerError,
    TransportError,
)

__all__ = ["SimpleConsumer"]

log = logging.getLogger("producer.consumer")

#: BATCH_ACK_MESSAGE is used only on brokers known to serve it (seen on 5.2.0).
BATCH_ACK_BROKER_VERSION = V5_2_0
_S = SimpleOptions()  # the defaults, written once there
Pair = tuple[str, str, str]  # (topic, broker name, broker address)


class SimpleConsumer(AsyncLifecycle):
    """Receive, then acknowledge, one message at a time::

        async with SimpleConsumer("my-group", "127.0.0.1:9876") as consumer:
            consumer.subscribe("Orders", "paid || refunded")
            for message in await consumer.receive(16, invisible_duration_ms=30_000):
                ...
                await consumer.ack(message)
            async for message in consumer:      # receive() in a loop
                ...
                await consumer.ack(message)

    ``orderly=True`` pops orderly: a queue's next message comes only after the ones
    before it are acked (or their invisible time runs out, and they come again first).
    """

    _kind = "consumer"
    #: The settings, built from the keywords (and checked) before ``__init__``'s body.
    options: SimpleOptions

    @takes_options(SimpleOptions, wiring=("credentials", "ssl", "clock", "rng"))
    def __init__(
        self,
        group: str,
        namesrv: str | list[str],
        *,
        await_duration_ms: int = AWAIT_DURATION_MS,
        invisible_duration_ms: int = _S.invisible_duration_ms,
        receive_batch: int = _S.receive_batch,
        orderly: bool = _S.orderly,
        request_timeout_ms: float = _S.request_timeout_ms,
        credentials: Credentials | None = None,
        ssl: bool | ssl_module.SSLContext | None = None,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        connect_timeout_ms: float = CONNECT_TIMEOUT_MS,
    ) -> None:
        check_group(group)
        options = self.options  # built from the keywords above by @takes_options
        self.group = group
        self.orderly = options.orderly
        self.await_duration_ms = options.await_duration_ms
        self.invisible_duration_ms = options.invisible_duration_ms
        self.receive_batch = options.receive_batch
        self._request_timeout_ms = options.request_timeout_ms
        self._who = Identity.of_tool(
            group, "pop", namesrv, credentials, ssl, options.connect_timeout_ms
        )
        self._clock_option = clock
        self._clock: Clock | None = None
        self._rng = rng or random.Random()
        self._pool: ConnectionPool | None = None
        self._api: BrokerApi | None = None
        self._subscriptions: dict[str, str] = {}
        self._versions: dict[str, int] = {}
        self._normal_topics: set[tuple[str, str]] = set()  # (broker address, topic) not FIFO
        self._turn = 0
        self._buffer: deque[PoppedMessage] = deque()

    def __repr__(self) -> str:
        state = self.state.value
        return f"SimpleConsumer({self.group!r}, {state}, topics={sorted(self._subscriptions)})"

    # -- lifecycle -----------------------------------------------------------------------

    async def start(self) -> None:
        """Open the connections (``async with`` does this and :meth:`aclose`)."""
        self._refuse_start()
        runtime = current_runtime()
        self._clock = self._clock_option or LoopClock(runtime.loop_time)
        self._pool, self._api = await open_api(runtime, self._who, self._clock, self._rng)
        self._now_running()

    async def aclose(self) -> None:
        """Close the connections. Messages received and not acked come back to the group
        once their invisible time runs out."""
        if not self._close_begins():
            return
        pool, self._pool, self._api = self._pool, None, None
        if pool is not None:
            await pool.__aexit__(None, None, None)
        self._now_closed()

    # -- subscriptions -------------------------------------------------------------------

    def subscribe(self, topic: str, tags: str = "*") -> None:
        """Receive ``topic``'s messages whose tag ``tags`` names (``"A || B"``, ``*``)."""
        self._subscriptions[topic] = parse_subscription(topic, tags).expression

    def unsubscribe(self, topic: str) -> None:
        """Receive nothing more from ``topic``."""
        self._subscriptions.pop(topic, None)

    def subscriptions(self) -> dict[str, str]:
        """Topic -> tag expression, as subscribed."""
        return dict(self._subscriptions)

    # -- receiving -----------------------------------------------------------------------

    async def receive(
        self, max_messages: int | None = None, invisible_duration_ms: int | None = None
    ) -> list[PoppedMessage]:
        """Up to ``max_messages`` (1-32) messages gathered from the brokers of the subscribed
        topics, each of them invisible to the group's other consumers for
        ``invisible_duration_ms`` (any positive int of ms: the broker checks none) unless
        acked first; ``[]`` when none came within ``await_duration_ms``.

        What is waiting is gathered first: each (topic, broker) in turn, without waiting,
        until ``max_messages`` are held. When none was waiting, the call long-polls those
        brokers one after the other, each for its share of ``await_duration_ms`` (one broker:
        all of it), and stops at the first that answers, topping its answer up from the
        others. Never more than ``max_messages`` are popped: each pop asks for what is left.
        A broker that fails (down, timing out) is passed over with a WARNING while another
        answers; when every one fails, its error is raised."""
        count = self.receive_batch if max_messages is None else max_messages
        invisible = (
            self.invisible_duration_ms if invisible_duration_ms is None else invisible_duration_ms
        )
        check_int("max_messages", count, 1, MAX_POP_MESSAGES)
        check_invisible(invisible)
        api, clock = self._open()
        failed: dict[Pair, TransportError] = {}
        pairs = await self._in_turn(api, failed)
        deadline = clock.monotonic_ms() + self.await_duration_ms
        gathered = await self._sweep(api, pairs, count, invisible, failed)
        if len(failed) == len(pairs):
            raise next(iter(failed.values()))
        share = -(-self.await_duration_ms // len(pairs))
        for pair in (p for p in pairs if p not in failed):
            left = int(deadline - clock.monotonic_ms())
            if gathered or left <= 0:
                break
            gathered = await self._try_pop(api, pair, count, invisible, min(share, left), failed)
            if gathered:
                gathered += await self._sweep(api, pairs, count - len(gathered), invisible, {})
        return gathered

    async def _sweep(
        self,
        api: BrokerApi,
        pairs: list[Pair],
        count: int,
        invisible: int,
        failed: dict[Pair, TransportError],
    ) -> list[PoppedMessage]:
        """What is waiting at each (topic, broker) in turn, without waiting, up to ``count``."""
        gathered: list[PoppedMessage] = []
        for pair in (p for p in pairs if p not in failed):
            if len(gathered) >= count:
                break
            gathered += await self._try_pop(api, pair, count - len(gathered), invisible, 0, failed)
        return gathered

    async def _try_pop(
        self,
        api: BrokerApi,
        pair: Pair,
        count: int,
        invisible: int,
        poll_ms: int,
        failed: dict[Pair, TransportError],
    ) -> list[PoppedMessage]:
        """:meth:`_pop`, or ``[]`` when the broker cannot be reached (noted in ``failed``)."""
        try:
            return await self._pop(api, pair, count, invisible, poll_ms)
        except TransportError as exc:
            self._passed_over(pair, exc, failed)
            return []

    def _passed_over(
        self, pair: Pair, error: TransportError, failed: dict[Pair, TransportError]
    ) -> None:
        topic, broker_name, addr = pair
        log.warning(
            "%s: broker %s (%s) passed over for %s: %s", self.group, broker_name, addr, topic, error
        )
        failed[pair] = error

    async def _pop(
        self, api: BrokerApi, pair: Pair, count: int, invisible: int, poll_ms: int
    ) -> list[PoppedMessage]:
        """One POP_MESSAGE of every queue of one broker of one topic (queueId -1)."""
        topic, broker_name, addr = pair
        assert self._clock is not None, "running"
        clock = self._clock
        sent_at, born = clock.monotonic_ms(), clock.wall_ms()
        params = PopParams(
            group=self.group, topic=topic, broker_name=broker_name, max_messages=count,
            invisible_ms=invisible, poll_ms=poll_ms, born_ms=born,
            init_mode=InitMode.MAX, expression=self._subscriptions[topic], order=self.orderly,
        )  # fmt: skip
        timeout = poll_ms + self._request_timeout_ms
        try:
            response = await api.client.invoke(addr, pop_request(params), timeout)
        except TransportError:  # its route is asked again before the next receive
            api.nodes.failed(addr, api.clock.monotonic_ms())
            raise
        result = parse_pop_response(response)
        if not result.found:
            return []
        timing = PopTiming(sent_at, born, clock.monotonic_ms())
        return popped_messages(result, self.group, topic, broker_name, timing)

    def __aiter__(self) -> SimpleConsumer:
        return self

    async def __anext__(self) -> PoppedMessage:
        while not self._buffer:
            if self.state in ENDED:
                raise StopAsyncIteration
            self._buffer.extend(await self.receive())
        return self._buffer.popleft()

    # -- acknowledging -------------------------------------------------------------------

    async def ack(self, message: PoppedMessage) -> None:
        """Acknowledge ``message`` with its current receipt handle: it is not delivered
        again. Acking twice sends nothing the second time. Raises
        :class:`~producer.errors.ReceiptHandleExpiredError` (and sends nothing) when its
        invisible time already ran out: it will be delivered again."""
        api, clock = self._open()
        receipt = decide(message, self.group, "ack", clock.monotonic_ms())
        if receipt is None:
            return
        addr = api.addr(receipt.handle.broker_name)
        request = ack_request(self.group, receipt.topic, receipt.handle)
        check_ack(await api.client.invoke(addr, request, self._request_timeout_ms))
        receipt.state = ReceiptState.ACKED

    async def ack_batch(self, messages: Sequence[PoppedMessage]) -> None:
        """Acknowledge several messages: one BATCH_ACK_MESSAGE per broker and topic on a
        broker known to have it (5.2.0 on), else one ack each. Every message is checked
        first (as :meth:`ack` does): an expired one raises before anything is sent."""
        api, clock = self._open()
        now = clock.monotonic_ms()
        chosen = [(m, r) for m in messages if (r := decide(m, self.group, "ack", now)) is not None]
        groups: dict[tuple[str, str], list[Receipt]] = {}
        for _, receipt in chosen:
            groups.setdefault((receipt.handle.broker_name, receipt.topic), []).append(receipt)
        for (broker_name, topic), receipts in groups.items():
            addr = api.addr(broker_name)
            if self._versions.get(addr, 0) < BATCH_ACK_BROKER_VERSION or len(receipts) == 1:
                for receipt in receipts:
                    request = ack_request(self.group, topic, receipt.handle)
                    check_ack(await api.client.invoke(addr, request, self._request_timeout_ms))
                    receipt.state = ReceiptState.ACKED
                continue
            request = batch_ack_request(self.group, topic, [r.handle for r in receipts])
            check_ack(await api.client.invoke(addr, request, self._request_timeout_ms))
            for receipt in receipts:
                receipt.state = ReceiptState.ACKED

    async def change_invisible_duration(
        self, message: PoppedMessage, invisible_duration_ms: int
    ) -> PoppedMessage:
        """Hide ``message`` for ``invisible_duration_ms`` from now on instead of what is
        left, and return it: the message to ack next (the same object, now holding the
        broker's new receipt handle; :meth:`ack` always uses a message's current handle).
        The old handle is spent: the broker answers an ack with it "success", acks nothing
        and delivers the message again when the new time runs out."""
        check_invisible(invisible_duration_ms)
        api, clock = self._open()
        receipt = decide(message, self.group, "change the invisible time of", clock.monotonic_ms())
        assert receipt is not None
        addr = api.addr(receipt.handle.broker_name)
        request = change_invisible_request(
            self.group, receipt.topic, receipt.handle, invisible_duration_ms
        )
        sent_at = clock.monotonic_ms()
        response = await api.client.invoke(addr, request, self._request_timeout_ms)
        handle = parse_change_response(response, receipt.handle)
        receipt.renewed(handle, sent_at + invisible_duration_ms)
        return message

    async def dead_letter(self, message: PoppedMessage, max_reconsume_times: int = 16) -> None:
        """Move ``message`` to the group's dead-letter queue ``%DLQ%<group>``
        (CONSUMER_SEND_MSG_BACK with delay level -1), then ack it: it is not delivered
        again. Raises :class:`~producer.errors.ReceiptHandleExpiredError` (nothing sent)
        when its invisible time already ran out."""
        api, clock = self._open()
        if decide(message, self.group, "dead-letter", clock.monotonic_ms()) is None:
            raise LocalProtocolError(f"message {message.msg_id} was already acknowledged")
        await api.send_back(message, -1, max_reconsume_times)
        await self.ack(message)

    # -- helpers -------------------------------------------------------------------------

    async def check(self) -> None:
        """Check now what the first ``receive`` of each subscribed topic would: a route, a
        5.x broker for each (:class:`~producer.errors.PopUnsupportedError`), and no FIFO
        topic without ``orderly``. Nothing is popped."""
        api, _ = self._open()
        for topic, broker_name, addr in await self._pairs(api):
            await self._check_version(api, broker_name, addr, topic)

    async def _pairs(self, api: BrokerApi) -> list[Pair]:
        """(topic, broker name, address) of every subscribed topic's readable brokers."""
        if not self._subscriptions:
            raise LocalProtocolError("subscribe() to a topic before receive()")
        pairs: list[Pair] = []
        for topic in sorted(self._subscriptions):
            queues = await self._route(api, topic)
            brokers = sorted({q.broker_name for q in queues.queues})
            pairs += [
                (topic, b, queues.broker_addrs[b]) for b in brokers if b in queues.broker_addrs
            ]
        if not pairs:
            raise LocalProtocolError(f"no readable queue for {sorted(self._subscriptions)}")
        return pairs

    @staticmethod
    async def _route(api: BrokerApi, topic: str) -> TopicQueues:
        """The cached route; asked again after a broker failed (every 2 s while one is
        down: a dead master leaves it, a promoted one's new address comes in)."""
        cached = api.cached(topic)
        if cached is None or api.nodes.route_due(topic, api.clock.monotonic_ms()):
            try:
                return await api.refresh(topic)
            except ProducerError:
                if cached is None:
                    raise
        assert cached is not None
        return cached

    async def _in_turn(self, api: BrokerApi, failed: dict[Pair, TransportError]) -> list[Pair]:
        """Every subscribed topic's brokers, checked (:meth:`_check_version`; one that
        cannot be reached goes in ``failed``), starting one further on at each call, so
        that no broker is always asked first."""
        pairs = await self._pairs(api)
        for pair in pairs:
            topic, broker_name, addr = pair
            try:
                await self._check_version(api, broker_name, addr, topic)
            except TransportError as exc:
                self._passed_over(pair, exc, failed)
        self._turn = (self._turn + 1) % len(pairs)
        return pairs[self._turn :] + pairs[: self._turn]

    async def _check_version(self, api: BrokerApi, broker_name: str, addr: str, topic: str) -> None:
        version = self._versions.get(addr)
        if version is None:
            response = await api.client.invoke(
                addr, max_offset_request(topic, 0), HOUSEKEEPING_TIMEOUT_MS
            )
            version = self._versions[addr] = response.version
        if version < POP_BROKER_VERSION:
            raise PopUnsupportedError(broker_name, addr, version_name(version))
        if not self.orderly and (addr, topic) not in self._normal_topics:
            kind = await self._message_type(api, addr, topic)
            if kind == "FIFO":
                raise InvalidOptionError(
                    f"topic {topic} is a FIFO topic on broker {broker_name}: pop it with "
                    "SimpleConsumer(..., orderly=True), or its messages come out of order"
                )
            self._normal_topics.add((addr, topic))

    async def _message_type(self, api: BrokerApi, addr: str, topic: str) -> str:
        """The topic's 5.x message type (GET_TOPIC_CONFIG); ``NORMAL`` when the broker will
        not say (an error answer: no such request, no permission)."""
        request = topic_config_request(topic)
        try:
            return parse_message_type(
                await api.client.invoke(addr, request, HOUSEKEEPING_TIMEOUT_MS)
            )
        except BrokerError as exc:
            log.debug("message type of %s at %s unknown: %s", topic, addr, exc)
            return "NORMAL"

    def _open(self) -> tuple[BrokerApi, Clock]:
        if self._api is None or self._clock is None:
            raise self._not_running()
        return self._api, self._clock
