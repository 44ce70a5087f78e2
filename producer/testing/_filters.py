"""A 4.9.4 broker's SQL92 filtering (no I/O): ``ConsumerFilterManager``, the SQL part of
``PullMessageProcessor``'s subscription checks, and ``ClientManageProcessor.checkClientConfig``.

Heartbeats register each group's SQL92 expression per topic, compiled; an expression that
does not compile is not registered, so that group's pulls are answered 27
FILTER_DATA_NOT_EXIST. A pull that carries its own SQL92 subscription (the pull consumer's)
is never refused for a bad expression: the broker then filters nothing, as
``ConsumerFilterManager.build`` returns null. Filtering needs ``enablePropertyFilter=true``
(the dev cluster's ``property_filter=True``); without it a SQL92 pull or check is answered
1 SYSTEM_ERROR. Bloom-filter bit maps (``enableCalcFilterBitMap``, off by default) are not
played: every message is evaluated, as they are with the default.
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from producer._remoting.command import RemotingCommand
from producer._remoting.sql92 import compile_sql92
from producer._remoting.sql92_build import SqlParseError
from producer._remoting.sql92_nodes import Node
from producer._remoting.subscription import SQL92, TAG, Subscription
from producer._response_codes import ResponseCode
from producer.testing._consume_fields import Refused, SubscriptionData

__all__ = [
    "ConsumerFilters",
    "FilterData",
    "check_client_config",
    "check_property_filter",
    "is_tag_type",
    "pull_own_filter",
]

_PARSE_FAILED = "parse the consumer's subscription failed"


def is_tag_type(expression_type: str | None) -> bool:
    """``ExpressionType.isTagType``: null, empty or TAG."""
    return expression_type in (None, "", TAG)


def _compile(expression_type: str, expression: str) -> Node | None:
    """``FilterFactory.INSTANCE.get(type).compile(expr)``; None when it fails."""
    if expression_type != SQL92:
        return None  # no FilterSpi for the type
    try:
        return compile_sql92(expression)
    except SqlParseError:
        return None


@dataclass
class FilterData:
    """``ConsumerFilterData``: one group's compiled expression for one topic."""

    expression: str
    expression_type: str
    compiled: Node | None
    client_version: int


class ConsumerFilters:
    """``ConsumerFilterManager``: (topic, group) -> the registered filter."""

    def __init__(self) -> None:
        self._data: dict[tuple[str, str], FilterData] = {}

    def __repr__(self) -> str:
        return f"ConsumerFilters({sorted(self._data)})"

    def register(self, group: str, subscriptions: list[SubscriptionData]) -> None:
        for sub in subscriptions:
            self._register(sub.topic, group, sub.subString, sub.expressionType, sub.subVersion)

    def _register(self, topic: str, group: str, expr: str, kind: str, version: int) -> None:
        """``FilterDataMapByTopic.register``: a newer version replaces, an expression that
        no longer compiles removes the old one; an older or equal version is ignored."""
        if is_tag_type(kind) or not expr:
            return
        old = self._data.get((topic, group))
        if old is not None and version <= old.client_version:
            return
        if old is not None and (old.expression, old.expression_type) == (expr, kind):
            old.client_version = version
            return
        compiled = _compile(kind, expr)
        if compiled is None:
            self._data.pop((topic, group), None)  # "let client report error"
            return
        self._data[(topic, group)] = FilterData(expr, kind, compiled, version)

    def get(self, topic: str, group: str) -> FilterData | None:
        return self._data.get((topic, group))

    def for_registered(self, sub: Subscription, group: str, sub_version: int) -> Node | None:
        """The filter of a pull without its own subscription (27 / 28 when missing/old)."""
        if is_tag_type(sub.expression_type):
            return None
        found = self.get(sub.topic, group)
        if found is None:
            raise Refused(
                ResponseCode.FILTER_DATA_NOT_EXIST,
                "The broker's consumer filter data is not exist!Your expression may be wrong!",
            )
        if found.client_version < sub_version:
            raise Refused(
                ResponseCode.FILTER_DATA_NOT_LATEST,
                "the consumer's consumer filter data not latest",
            )
        return found.compiled


def pull_own_filter(expression: str | None, expression_type: str | None) -> Node | None:
    """``FilterAPI.build`` + ``ConsumerFilterManager.build`` for a pull carrying its own
    subscription: an empty expression is 23; one that does not compile filters nothing."""
    if is_tag_type(expression_type):
        return None
    if not expression:
        raise Refused(ResponseCode.SUBSCRIPTION_PARSE_FAILED, _PARSE_FAILED)
    return _compile(expression_type or "", expression)


def check_property_filter(expression_type: str | None, enabled: bool) -> None:
    if not is_tag_type(expression_type) and not enabled:
        raise Refused(
            ResponseCode.SYSTEM_ERROR,
            f"The broker does not support consumer to filter message by {expression_type}",
        )


class _CheckBody(msgspec.Struct):
    clientId: str | None = None  # noqa: N815 - wire name
    group: str | None = None
    subscriptionData: SubscriptionData | None = None  # noqa: N815 - wire name


def check_client_config(request: RemotingCommand, property_filter: bool) -> RemotingCommand:
    """CHECK_CLIENT_CONFIG: SUCCESS for no body, no subscription or a TAG one; 1 without
    ``enablePropertyFilter``; 23 with the parser's reason when the expression fails."""
    try:
        body = msgspec.json.decode(request.body or b"null", type=_CheckBody | None)
    except msgspec.DecodeError as exc:
        return request.make_response(ResponseCode.SYSTEM_ERROR, remark=f"check body: {exc}")
    sub = None if body is None else body.subscriptionData
    if sub is None or is_tag_type(sub.expressionType):
        return request.make_response(ResponseCode.SUCCESS)
    if not property_filter:
        remark = f"The broker does not support consumer to filter message by {sub.expressionType}"
        return request.make_response(ResponseCode.SYSTEM_ERROR, remark=remark)
    if sub.expressionType != SQL92:  # FilterFactory has no such type: a null message
        return request.make_response(ResponseCode.SUBSCRIPTION_PARSE_FAILED)
    try:
        compile_sql92(sub.subString)
    except SqlParseError as exc:
        return request.make_response(ResponseCode.SUBSCRIPTION_PARSE_FAILED, remark=exc.reason)
    return request.make_response(ResponseCode.SUCCESS)
