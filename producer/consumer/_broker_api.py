"""The consumer's requests to name servers and brokers (the I/O shell over the pure core).

Every call goes through the shared :class:`~producer._client.remoting.RemotingClient`
(connect within budget, request signing) and finds brokers through the route table.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, replace

from producer._client.clock import Clock
from producer._client.remoting import RemotingClient
from producer._client.routes import RouteTable
from producer._consume.pull_node import Node, PullNodes
from producer._remoting.command import RemotingCommand
from producer._remoting.committed_offsets import (
    all_offsets_request,
    committed_in_table,
    read_query_offset,
)
from producer._remoting.consumer_requests import (
    ConsumerData,
    PullParams,
    PullResult,
    check_success,
    consumer_heartbeat_request,
    consumer_list_request,
    lock_batch_request,
    min_offset_request,
    parse_consumer_list,
    parse_lock_batch,
    parse_offset_response,
    parse_pull_response,
    pull_request,
    query_offset_request,
    search_offset_request,
    send_back_request,
    unlock_batch_request,
    unregister_consumer_request,
    update_offset_request,
)
from producer._remoting.delay_levels import DelayLevels
from producer._remoting.message_codec import COMPRESSED_FLAG, COMPRESSION_TYPE_MASK
from producer._remoting.namespace import wrap
from producer._remoting.producer_requests import build_retry_send_request, max_offset_request
from producer._remoting.properties import (
    DELAY,
    MAX_RECONSUME_TIMES,
    ORIGIN_MESSAGE_ID,
    RECONSUME_TIME,
    RETRY_TOPIC,
    TRANSACTION_PREPARED,
    encode_properties,
)
from producer._remoting.request_codes import RequestCode
from producer._remoting.retry_topics import retry_topic
from producer._remoting.route import (
    build_subscribe_queues,
    master_addresses,
    replica_addresses,
)
from producer._remoting.send_header import send_status_or_raise
from producer._types.consumer.received import ReceivedMessage
from producer._types.message import MessageQueue
from producer.consumer._pull_watch import RouteView, unless_gone
from producer.errors import NoRouteError, ProducerError, TransportError

log = logging.getLogger("producer.consumer")

HOUSEKEEPING_TIMEOUT_MS = 3000.0
SEND_BACK_TIMEOUT_MS = 5000.0  # Java's sendMessageBack timeout


@dataclass(frozen=True, slots=True)
class TopicQueues:
    """A topic's readable queues, its brokers' masters, and every replica of each
    broker (name -> {broker id: address}, 0 the master)."""

    topic: str
    queues: list[MessageQueue]
    broker_addrs: dict[str, str]
    replicas: dict[str, dict[int, str]]


class BrokerApi:
    """One consumer's view of the cluster: routes, brokers, and the requests it makes."""

    def __init__(
        self,
        *,
        group: str,
        client_id: str,
        client: RemotingClient,
        routes: RouteTable,
        clock: Clock,
        rng: random.Random,
    ) -> None:
        self.group = group
        self.client_id = client_id
        self.client = client
        self.routes = routes
        self.clock = clock
        self.rng = rng
        #: Topics on the wire are ``<namespace>%topic``; messages show the user's name.
        self.namespace: str | None = None
        self._topics: dict[str, TopicQueues] = {}
        #: Which replica each queue is read from (docs/consuming.md, High availability).
        self.nodes = PullNodes()
        self._retry_now: set[MessageQueue] = set()
        self._watch = RouteView(self.nodes, clock, self.replicas, self._recheck)
        #: Called with replica addresses a route names for the first time (a slave, a
        #: promoted master): the push consumer heartbeats them before it pulls there.
        self.on_new_replicas: Callable[[list[str]], Awaitable[None]] | None = None

    def __repr__(self) -> str:
        return f"BrokerApi({self.group}, topics={sorted(self._topics)})"

    # -- routes --------------------------------------------------------------------------

    async def refresh(self, topic: str) -> TopicQueues:
        """The topic's readable queues and broker masters, fetched from a name server."""
        data = await self.routes.fetch(topic, self._deadline())
        self.nodes.routed(topic, self.clock.monotonic_ms())
        known = set(self.replica_addrs())
        found = TopicQueues(
            topic,
            build_subscribe_queues(topic, data),
            master_addresses(data),
            replica_addresses(data),
        )
        self._topics[topic] = found
        new = [a for a in self.replica_addrs() if a not in known]
        if new and known and self.on_new_replicas is not None:
            await self.on_new_replicas(new)
        return found

    def cached(self, topic: str) -> TopicQueues | None:
        return self._topics.get(topic)

    def broker_addrs(self) -> dict[str, str]:
        addrs: dict[str, str] = {}
        for topic in self._topics.values():
            addrs.update(topic.broker_addrs)
        return addrs

    def replica_addrs(self) -> list[str]:
        """Every known replica's address, masters and slaves, once each, sorted."""
        return sorted(
            {a for t in self._topics.values() for r in t.replicas.values() for a in r.values()}
        )

    def replicas(self, queue: MessageQueue) -> dict[int, str]:
        """The replicas of ``queue``'s broker, from its topic's route (else any route)."""
        found = self._topics.get(queue.topic)
        if found is not None and queue.broker_name in found.replicas:
            return found.replicas[queue.broker_name]
        for topic in self._topics.values():
            if queue.broker_name in topic.replicas:
                return topic.replicas[queue.broker_name]
        return {}

    def addr(self, broker_name: str) -> str:
        for topic in self._topics.values():
            found = topic.broker_addrs.get(broker_name)
            if found is not None:
                return found
        raise NoRouteError(
            broker_name, self.routes.namesrv_addrs, "no known master for this broker"
        )

    def _deadline(self, timeout_ms: float = HOUSEKEEPING_TIMEOUT_MS) -> float:
        return self.clock.monotonic_ms() + timeout_ms

    # -- membership ----------------------------------------------------------------------

    async def heartbeat(self, data: ConsumerData, addrs: Iterable[str] | None = None) -> None:
        """HEART_BEAT to every known replica, slaves too (as Java's consumers do: a slave
        serves pulls of the subscriptions it heard of); a failure is logged, not raised."""
        request_body = consumer_heartbeat_request(self.client_id, [data]).body
        for addr in self.replica_addrs() if addrs is None else addrs:
            request = RemotingCommand(RequestCode.HEART_BEAT, body=request_body)
            try:
                check_success(await self.client.invoke(addr, request, HOUSEKEEPING_TIMEOUT_MS))
            except ProducerError as exc:
                log.warning("heartbeat to %s failed: %s", addr, exc)

    async def consumer_ids(self, topic: str) -> list[str]:
        """The group's members, asked of one random broker of ``topic`` (as Java does)."""
        queues = self._topics.get(topic)
        if queues is None or not queues.replicas:
            return []
        # findBrokerAddrByTopic: a random broker; its master, else one of its slaves.
        replicas = queues.replicas[self.rng.choice(sorted(queues.replicas))]
        node = self.nodes.for_offsets(replicas, self.clock.monotonic_ms())
        if node is None:
            return []
        response = await self.client.invoke(
            node.addr, consumer_list_request(self.group), HOUSEKEEPING_TIMEOUT_MS
        )
        return parse_consumer_list(response)

    async def unregister(self, timeout_ms: float) -> None:
        for addr in self.replica_addrs():
            request = unregister_consumer_request(self.client_id, self.group)
            try:
                await self.client.invoke(addr, request, timeout_ms)
            except ProducerError as exc:
                log.debug("unregister from %s failed: %s", addr, exc)

    # -- offsets -------------------------------------------------------------------------

    async def query_offset(self, queue: MessageQueue) -> int | None:
        """The group's committed offset of ``queue``, or ``None`` when it has none. A 4.x
        broker's 0 may mean either; its offset table says which (docs/consuming.md 1.8)."""
        response = await self._invoke_queue(queue, query_offset_request(self.group, queue))
        answer = read_query_offset(response)
        if answer.certain:
            return answer.offset
        table = await self._invoke_queue(queue, all_offsets_request())
        return committed_in_table(table, self.group, queue)

    async def min_offset(self, queue: MessageQueue) -> int:
        return parse_offset_response(await self._invoke_queue(queue, min_offset_request(queue)))

    async def max_offset(self, queue: MessageQueue) -> int:
        request = max_offset_request(queue.topic, queue.queue_id)
        return parse_offset_response(await self._invoke_queue(queue, request))

    async def search_offset(self, queue: MessageQueue, timestamp_ms: int) -> int:
        request = search_offset_request(queue, timestamp_ms)
        return parse_offset_response(await self._invoke_queue(queue, request))

    async def persist(self, queue: MessageQueue, offset: int, *, oneway: bool = True) -> None:
        """UPDATE_CONSUMER_OFFSET (oneway from the periodic persist, as Java sends it)."""
        request = update_offset_request(self.group, queue, offset)
        addr = self._offset_addr(queue)
        if oneway:
            await self.client.invoke_oneway(addr, request, HOUSEKEEPING_TIMEOUT_MS)
        else:
            await self.client.invoke(addr, request, HOUSEKEEPING_TIMEOUT_MS)

    async def _invoke_queue(self, queue: MessageQueue, request: RemotingCommand) -> RemotingCommand:
        addr = self._offset_addr(queue)
        try:
            return await self.client.invoke(addr, request, HOUSEKEEPING_TIMEOUT_MS)
        except TransportError:
            self.nodes.failed(addr, self.clock.monotonic_ms())
            if self._offset_addr(queue) == addr:
                raise
        return await self.client.invoke(self._offset_addr(queue), request, HOUSEKEEPING_TIMEOUT_MS)

    def _offset_addr(self, queue: MessageQueue) -> str:
        """Where ``queue``'s offsets are committed and asked: its master, or with none
        (absent from the route, or down) a slave, as ``RemoteBrokerOffsetStore`` does."""
        node = self.nodes.for_offsets(self.replicas(queue), self.clock.monotonic_ms())
        if node is None:
            return self.addr(queue.broker_name)  # raises NoRouteError naming the broker
        return node.addr

    # -- orderly locks -------------------------------------------------------------------

    async def lock(self, broker_name: str, queues: list[MessageQueue]) -> set[MessageQueue]:
        """LOCK_BATCH_MQ: the queues (all on ``broker_name``) the broker now locks for us."""
        request = lock_batch_request(self.client_id, self.group, queues)
        response = await self.client.invoke(
            self.addr(broker_name), request, HOUSEKEEPING_TIMEOUT_MS
        )
        return parse_lock_batch(response)

    async def unlock(
        self, broker_name: str, queues: list[MessageQueue], *, oneway: bool = True
    ) -> None:
        """UNLOCK_BATCH_MQ: oneway on hand-over, acknowledged at shutdown (as Java)."""
        request = unlock_batch_request(self.client_id, self.group, queues)
        addr = self.addr(broker_name)
        if oneway:
            await self.client.invoke_oneway(addr, request, HOUSEKEEPING_TIMEOUT_MS)
        else:
            check_success(await self.client.invoke(addr, request, HOUSEKEEPING_TIMEOUT_MS))

    # -- pulls ---------------------------------------------------------------------------

    async def pull(self, params: PullParams, timeout_ms: float) -> PullResult:
        """One PULL_MESSAGE, from the replica :class:`PullNodes` chooses (the route asked
        again first when due: every few seconds)."""
        queue = params.queue
        if self.nodes.route_due(queue.topic, self.clock.monotonic_ms()):
            await self._recheck(queue.topic)
        node = self._pull_node(queue)
        return await self.settle_pull(
            queue, node, self.client.invoke(node.addr, self._on(node, params), timeout_ms)
        )

    def start_pull(
        self, params: PullParams, timeout_ms: float
    ) -> tuple[asyncio.Future[RemotingCommand | None], Node] | None:
        """The PULL_MESSAGE sent now, its answer a loop future (read it with
        :meth:`settle_pull`) and the replica it went to, if that connection is open and
        starts requests (asyncio); ``None`` otherwise (or the route is due), nothing sent."""
        if self.nodes.route_due(params.queue.topic, self.clock.monotonic_ms()):
            self.nodes.recheck_now(params.queue.topic)  # the awaited pull asks for it
            return None
        node = self._pull_node(params.queue)
        connection = self.client.startable(node.addr)
        if connection is None:
            return None
        return self.client.start(connection, self._on(node, params), timeout_ms), node

    async def settle_pull(
        self,
        queue: MessageQueue,
        node: Node,
        answer: Awaitable[RemotingCommand | None],
    ) -> PullResult:
        """A pull's answer read, its suggestion kept; a transport failure marks the
        replica down (and says whether another can be pulled at once:
        :meth:`retry_at_once`). Abandoned, as a transport failure, once the route stops
        naming the replica (a hung master dropped by the name server)."""
        try:
            response = await unless_gone(self._watch, queue, node, answer)
        except TransportError:
            now = self.clock.monotonic_ms()
            self.nodes.failed(node.addr, now)
            if self.nodes.can_retry_at_once(queue, self.replicas(queue), node.addr, now):
                self._retry_now.add(queue)
            raise
        assert response is not None, "a pull is never oneway"
        result = parse_pull_response(response)
        self.nodes.suggest(queue, result.suggest_which_broker_id)
        return result

    def retry_at_once(self, queue: MessageQueue) -> bool:
        """Whether the pull of ``queue`` that just failed may be retried now, on another
        replica, without the pull retry delay (asked once per failure)."""
        if queue in self._retry_now:
            self._retry_now.discard(queue)
            return True
        return False

    def _pull_node(self, queue: MessageQueue) -> Node:
        node = self.nodes.choose(queue, self.replicas(queue), self.clock.monotonic_ms())
        if node is None:
            raise NoRouteError(
                queue.broker_name, self.routes.namesrv_addrs, "no known replica for this broker"
            )
        return node

    @staticmethod
    def _on(node: Node, params: PullParams) -> RemotingCommand:
        # A slave stores no offset from a pull: Java clears the commit flag for it.
        return pull_request(replace(params, commit=False) if node.is_slave else params)

    async def _recheck(self, topic: str) -> None:
        try:
            await self.refresh(topic)
        except ProducerError as exc:  # the route we have still serves
            log.info("%s: route of %r not refreshed: %s", self.group, topic, exc)

    # -- retries -------------------------------------------------------------------------

    async def send_back(
        self, message: ReceivedMessage, delay_level: int, max_reconsume_times: int
    ) -> None:
        """CONSUMER_SEND_MSG_BACK to the master of the broker the message came from."""
        request = send_back_request(
            group=self.group,
            commit_log_offset=message.commit_log_offset,
            delay_level=delay_level,
            origin_msg_id=message.msg_id,
            origin_topic=wrap(self.namespace, message.topic),
            max_reconsume_times=max_reconsume_times,
        )
        addr = self.addr(message.queue.broker_name)
        check_success(await self.client.invoke(addr, request, SEND_BACK_TIMEOUT_MS))

    async def send_to_retry_topic(
        self, message: ReceivedMessage, max_reconsume_times: int, *, reconsume_times: int
    ) -> None:
        """The fallback when send-back fails: SEND_MESSAGE_V2 of a copy to
        ``%RETRY%<group>`` with Java's properties (``DELAY = 3 + reconsumeTimes``), tried
        on each broker of the retry topic in turn."""
        topic = retry_topic(self.group)
        queues = self._topics.get(topic) or await self.refresh(topic)
        props = dict(message.properties)
        props.pop(TRANSACTION_PREPARED, None)
        props.setdefault(ORIGIN_MESSAGE_ID, message.msg_id)
        props[RETRY_TOPIC] = wrap(self.namespace, message.topic)
        props[RECONSUME_TIME] = str(reconsume_times)
        props[MAX_RECONSUME_TIMES] = str(max_reconsume_times)
        props[DELAY] = str(DelayLevels.retry_level(message.reconsume_times))
        last: ProducerError | None = None
        properties = encode_properties(props)
        now = self.clock.monotonic_ms()
        # A master seen down (its pulls failed) is tried last, not first.
        for queue in sorted(
            queues.queues,
            key=lambda q: self.nodes.is_down(queues.broker_addrs.get(q.broker_name, ""), now),
        ):
            request = build_retry_send_request(
                queue,
                body=message.body,
                # An undecodable body travels as stored, with the flag that says how.
                sys_flag=message.sys_flag & _BODY_FLAGS if message.undecodable else 0,
                flag=message.flag,
                properties=properties,
                born_timestamp=message.born_timestamp,
                reconsume_times=reconsume_times,
                max_reconsume_times=max_reconsume_times,
            )
            try:
                addr = queues.broker_addrs[queue.broker_name]
                response = await self.client.invoke(addr, request, SEND_BACK_TIMEOUT_MS)
                send_status_or_raise(response.code, response.remark)
                return
            except (ProducerError, KeyError) as exc:
                last = exc if isinstance(exc, ProducerError) else last
        raise last or NoRouteError(topic, self.routes.namesrv_addrs, "no queue to send back to")


_BODY_FLAGS = COMPRESSED_FLAG | COMPRESSION_TYPE_MASK
