"""A 5.x broker's server-side rebalance (``QueryAssignmentProcessor``, rocketmq-all-5.2.0).

SET_MESSAGE_REQUEST_MODE (401) keeps a mode per (topic, group) on this broker
(``MessageRequestModeManager``; ``mqadmin setConsumeMode`` sends it to every master);
a ``%RETRY%`` topic is refused with NO_PERMISSION ``retry topic is not allowed to set
mode``. QUERY_ASSIGNMENT (400) answers the queues a client takes, each with the mode: the
topic's readable queues on every broker (from the name server's route, as
``TopicRouteInfoManager.getTopicSubscribeInfo``), split among the group's live clients by
the named strategy (``AVG``, ``AVG_BY_CIRCLE``). Without a mode set the broker's default
is PULL (``defaultMessageRequestMode``; ``%RETRY%`` topics always PULL). In POP mode with
``popShareQueueNum`` <= 0 (or at least the other clients' count) every client takes every
broker whole (queue id -1); otherwise its own share and the next ``popShareQueueNum``
clients' (``allocate4Pop``). No route, no live client or an unknown strategy: ``{}``
(the client keeps what it has).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from producer._remoting.allocate import allocate_averagely, java_sorted, queue_sort_key
from producer._remoting.assignment import (
    MessageRequestMode,
    QueryAssignment,
    SetRequestMode,
    assignment_body,
    parse_query_assignment,
    parse_set_request_mode,
)
from producer._remoting.command import RemotingCommand
from producer._remoting.request_codes import RequestCode
from producer._remoting.retry_topics import RETRY_PREFIX
from producer._remoting.route import TopicRouteData, build_subscribe_queues
from producer._response_codes import ResponseCode
from producer._types.message import MessageQueue
from producer.errors import RemoteProtocolError
from producer.testing._groups import ConsumerRegistry

__all__ = ["ASSIGNMENT_CODES", "Assignments"]

ASSIGNMENT_CODES = frozenset({RequestCode.QUERY_ASSIGNMENT, RequestCode.SET_MESSAGE_REQUEST_MODE})

Strategy = Callable[[Sequence[MessageQueue], Sequence[str], str], list[MessageQueue]]


def _by_circle(
    queues: Sequence[MessageQueue], clients: Sequence[str], me: str
) -> list[MessageQueue]:
    """``AllocateMessageQueueAveragelyByCircle``: every n-th queue from the client's index."""
    mq_all, cid_all = sorted(queues, key=queue_sort_key), java_sorted(clients)
    if me not in cid_all:
        return []
    index = cid_all.index(me)
    return [q for i, q in enumerate(mq_all) if i % len(cid_all) == index]


_STRATEGIES: dict[str, Strategy] = {"AVG": allocate_averagely, "AVG_BY_CIRCLE": _by_circle}


class Assignments:
    """One 5.x broker's request modes and its QUERY_ASSIGNMENT answers."""

    def __init__(
        self, registry: ConsumerRegistry, route_of: Callable[[str], TopicRouteData | None]
    ) -> None:
        self._registry = registry
        self._route_of = route_of
        self.modes: dict[tuple[str, str], SetRequestMode] = {}

    def __repr__(self) -> str:
        return f"Assignments({len(self.modes)} modes set)"

    def process(self, request: RemotingCommand) -> RemotingCommand:
        try:
            if request.code == RequestCode.SET_MESSAGE_REQUEST_MODE:
                return self._set_mode(request)
            return self._query(request)
        except RemoteProtocolError as exc:  # the processor's decode throws: SYSTEM_ERROR
            return request.make_response(ResponseCode.SYSTEM_ERROR, remark=str(exc))

    def _set_mode(self, request: RemotingCommand) -> RemotingCommand:
        body = parse_set_request_mode(request.body)
        if body.topic.startswith(RETRY_PREFIX):
            remark = "retry topic is not allowed to set mode"
            return request.make_response(ResponseCode.NO_PERMISSION, remark=remark)
        self.modes[(body.topic, body.consumer_group)] = body
        return request.make_response(ResponseCode.SUCCESS)

    def mode_of(self, topic: str, group: str) -> SetRequestMode:
        """The mode set for ``(topic, group)``, else the broker's default (PULL)."""
        found = self.modes.get((topic, group))
        return found or SetRequestMode(topic, group, MessageRequestMode.PULL, -1)

    def _query(self, request: RemotingCommand) -> RemotingCommand:
        query = parse_query_assignment(request.body)
        mode = self.mode_of(query.topic, query.consumer_group)
        queues = self._balance(query, mode)
        body = assignment_body(queues, mode.mode)
        return request.make_response(ResponseCode.SUCCESS, body=body)

    def _balance(self, query: QueryAssignment, mode: SetRequestMode) -> list[MessageQueue] | None:
        """``doLoadBalance``: ``None`` when the broker cannot tell."""
        route = self._route_of(query.topic)
        if route is None:
            return None
        mq_all = sorted(build_subscribe_queues(query.topic, route), key=queue_sort_key)
        if query.message_model == "BROADCASTING":
            return mq_all
        clients = self._registry.client_ids(query.consumer_group)
        strategy = _STRATEGIES.get(query.strategy_name)
        if not clients or strategy is None:
            return None
        me = query.client_id
        if mode.mode is MessageRequestMode.POP:
            return _allocate_for_pop(strategy, mq_all, clients, me, mode.pop_share_queue_num)
        return strategy(mq_all, clients, me)


def _allocate_for_pop(
    strategy: Strategy, mq_all: list[MessageQueue], clients: list[str], me: str, share: int
) -> list[MessageQueue]:
    """``allocate4Pop``: whole brokers (queue id -1), or shares of the next clients."""
    cid_all = java_sorted(clients)
    if share <= 0 or share >= len(cid_all) - 1:
        whole = {MessageQueue(q.topic, q.broker_name, -1): None for q in mq_all}
        return list(whole)
    if len(cid_all) > len(mq_all):
        if me not in cid_all:
            return []
        return [mq_all[cid_all.index(me) % len(mq_all)]]
    taken = strategy(mq_all, cid_all, me)
    if me in cid_all:
        index = cid_all.index(me)
        for step in range(1, share + 1):
            taken += strategy(mq_all, cid_all, cid_all[(index + step) % len(cid_all)])
    return list(dict.fromkeys(taken))
