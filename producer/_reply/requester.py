"""The requester's side of request-reply: ``Producer.request`` and its callback form.

Theory of operation. A request is a normal send (the producer's own sync path) whose
properties carry a fresh ``CORRELATION_ID``, our client id and the timeout as ``TTL``
(:mod:`producer._remoting.reply`). Before a topic's first request the requester makes
sure the reply can find it: the broker that receives a reply pushes it only to a client
that heartbeated it (``ReplyMessageProcessor.pushReplyMessage`` looks the channel up by
``REPLY_TO_CLIENT``), and a replier sends to any broker of ``<cluster>_REPLY_TOPIC``. So
the request topic's clusters are read from its route, each cluster's reply topic is
routed (a cluster without one fails the request before anything is sent:
:class:`~producer.errors.NoReplyTopicError`), cached in the producer's route table so
that the producer's heartbeats keep reaching those brokers, and each of its brokers is
heartbeated once now.

Each request waits in one :class:`~producer._remoting.reply.PendingRequests` table under
its ``CORRELATION_ID`` until (a) the broker's PUSH_REPLY_MESSAGE_TO_CLIENT arrives and
:meth:`Requester.receive` (called by the connection, never blocking) resolves it, or (b)
its deadline passes and the one sweeper task fails it with
:class:`~producer.errors.ReplyTimeout`, or (c) the send fails (its error is raised), or
(d) the producer closes (:meth:`Requester.close` fails it with ProducerClosedError). The
request's own coroutine owns its entry and removes it however it ends. A reply that
finds no entry (late, or not ours) is answered 0 and dropped, as Java does.
"""

from __future__ import annotations

import logging
import random
import uuid
from collections.abc import Awaitable, Callable

import anyio
from anyio.abc import TaskGroup

from latency_fault import java_string_hash
from producer._client.clock import Clock
from producer._client.remoting import RemotingClient
from producer._client.routes import RouteTable
from producer._remoting.command import RemotingCommand
from producer._remoting.producer_requests import heartbeat_request
from producer._remoting.properties import UNIQ_KEY
from producer._remoting.reply import (
    PendingRequests,
    PushedReply,
    parse_pushed_reply,
    reply_topic,
    request_properties,
)
from producer._remoting.route import TopicRouteData, master_addresses
from producer._remoting.send_header import DEFAULT_TOPIC
from producer._response_codes import ResponseCode
from producer._types.consumer.received import ReceivedMessage
from producer._types.message import MessageQueue
from producer.errors import (
    BrokerError,
    NoReplyTopicError,
    NoRouteError,
    ProducerClosedError,
    ProducerError,
    RemoteProtocolError,
    ReplyTimeout,
)

log = logging.getLogger("producer")

#: Sends the request: ``send(properties_of, budget_ms)``, where ``properties_of`` turns
#: the prepared send's properties into the request's.
SendRequest = Callable[[Callable[[str], str], float], Awaitable[object]]


class _ReplyWaiter:
    """One request's outcome: set once, by the push, the sweeper or close."""

    __slots__ = ("error", "event", "reply", "timeout_ms")

    def __init__(self, timeout_ms: float) -> None:
        self.event = anyio.Event()
        self.reply: ReceivedMessage | None = None
        self.error: ProducerError | None = None
        self.timeout_ms = timeout_ms

    def resolve(self, reply: ReceivedMessage | None, error: ProducerError | None) -> None:
        if not self.event.is_set():
            self.reply, self.error = reply, error
            self.event.set()


class Requester:
    """Requests of one producer: the pending table, its sweeper, the reply brokers."""

    def __init__(
        self,
        *,
        group: str,
        client_id: str,
        routes: RouteTable,
        client: RemotingClient,
        clock: Clock,
        rng: random.Random,
        tg: TaskGroup,
    ) -> None:
        self.group = group
        self.client_id = client_id
        self._routes = routes
        self._client = client
        self._clock = clock
        self._rng = rng
        self._tg = tg
        self._pending: PendingRequests[_ReplyWaiter] = PendingRequests()
        self._ready_topics: set[str] = set()
        self._heartbeated: set[str] = set()
        self._wake = anyio.Event()
        self._sweeping = False

    async def ask(self, topic: str, timeout_ms: float, send: SendRequest) -> ReceivedMessage:
        """Send the request to ``topic`` (wire name) and wait for its reply."""
        deadline = self._clock.monotonic_ms() + timeout_ms
        await self._reply_brokers_ready(topic, deadline)
        correlation_id = str(uuid.UUID(int=self._rng.getrandbits(128), version=4))
        ttl = int(timeout_ms)
        waiter = _ReplyWaiter(timeout_ms)
        self._pending.add(correlation_id, deadline, waiter)
        self._start_sweeper()
        try:
            budget = max(deadline - self._clock.monotonic_ms(), 1.0)
            await send(
                lambda p: request_properties(
                    p, correlation_id, self.client_id, ttl, java_string_hash
                ),
                budget,
            )
            await waiter.event.wait()
        finally:
            self._pending.settle(correlation_id)
        if waiter.error is not None:
            raise waiter.error
        assert waiter.reply is not None, "resolved"
        return waiter.reply

    # -- the reply's way back ---------------------------------------------------------

    async def _reply_brokers_ready(self, topic: str, deadline: float) -> None:
        """Heartbeat every broker of the reply topic of each cluster ``topic`` is on."""
        if topic in self._ready_topics:
            return
        data = await self._route_data(topic, deadline)
        for cluster in sorted({broker.cluster for broker in data.broker_datas}):
            replies = reply_topic(cluster)
            try:
                reply_route = await self._routes.fetch(replies, deadline)
            except NoRouteError as exc:
                raise NoReplyTopicError(
                    topic,
                    self._routes.namesrv_addrs,
                    f"its cluster {cluster!r} has no reply topic {replies!r}, so no reply "
                    "could reach this requester. A 4.x broker creates it at start; create "
                    f"it with `mqadmin updateTopic -c {cluster} -t {replies}`",
                ) from exc
            await self._routes.refresh(replies, deadline)  # heartbeats keep reaching them
            for addr in sorted(set(master_addresses(reply_route).values())):
                await self._heartbeat(addr, deadline)
        self._ready_topics.add(topic)

    async def _route_data(self, topic: str, deadline: float) -> TopicRouteData:
        try:
            return await self._routes.fetch(topic, deadline)
        except NoRouteError as exc:  # a topic to be auto-created: TBW102's brokers
            if exc.code != ResponseCode.TOPIC_NOT_EXIST:
                raise
            return await self._routes.fetch(DEFAULT_TOPIC, deadline)

    async def _heartbeat(self, addr: str, deadline: float) -> None:
        if addr in self._heartbeated:
            return
        request = heartbeat_request(self.client_id, [self.group])
        remaining = max(deadline - self._clock.monotonic_ms(), 1.0)
        response = await self._client.invoke(addr, request, remaining)
        if response.code != ResponseCode.SUCCESS:
            raise BrokerError.for_code(response.code, response.remark)
        self._heartbeated.add(addr)

    def receive(self, address: str, command: RemotingCommand) -> RemotingCommand:
        """PUSH_REPLY_MESSAGE_TO_CLIENT: hand the reply to its request; answer 0."""
        try:
            pushed = parse_pushed_reply(command)
        except RemoteProtocolError as exc:
            log.warning("a bad reply push from %s: %s", address, exc)
            return RemotingCommand(ResponseCode.SYSTEM_ERROR, remark=str(exc))
        waiter = self._pending.settle(pushed.correlation_id)
        if waiter is None:
            log.warning(
                "receive reply message, but not matched any request, CorrelationId: %s",
                pushed.correlation_id,
            )
        else:
            waiter.resolve(_received(pushed, self._broker_name(address)), None)
        return RemotingCommand(ResponseCode.SUCCESS)

    def _broker_name(self, address: str) -> str:
        names = [n for n, a in self._routes.broker_addrs().items() if a == address]
        return names[0] if names else address

    # -- deadlines --------------------------------------------------------------------

    def _start_sweeper(self) -> None:
        self._wake.set()  # a new deadline may be the earliest
        if not self._sweeping:
            self._sweeping = True
            self._tg.start_soon(self._sweep)

    async def _sweep(self) -> None:
        """The one task that fails requests whose deadline passed."""
        while True:
            self._wake = anyio.Event()
            for correlation_id, waiter in self._pending.expired(self._clock.monotonic_ms()):
                waiter.resolve(None, ReplyTimeout(correlation_id, waiter.timeout_ms))
            deadline = self._pending.next_deadline()
            if deadline is None:
                await self._wake.wait()
                continue
            with anyio.move_on_after(max(deadline - self._clock.monotonic_ms(), 0) / 1000.0):
                await self._wake.wait()

    def close(self) -> None:
        """Fail every pending request: the producer is closing."""
        for waiter in self._pending.drain():
            waiter.resolve(None, ProducerClosedError("the producer closed before the reply came"))

    def __repr__(self) -> str:
        return f"Requester({self.client_id}, {self._pending!r})"


def _received(pushed: PushedReply, broker_name: str) -> ReceivedMessage:
    """The reply as the application sees it (Java's ``MessageExt`` of the push)."""
    return ReceivedMessage(
        pushed.topic,
        pushed.body,
        pushed.properties,
        pushed.properties.get(UNIQ_KEY, ""),
        "",
        MessageQueue(pushed.topic, broker_name, pushed.queue_id),
        0,
        0,
        pushed.reconsume_times,
        pushed.born_timestamp,
        pushed.store_timestamp,
        pushed.born_host,
        pushed.store_host,
        flag=pushed.flag,
        sys_flag=pushed.sys_flag,
    )
