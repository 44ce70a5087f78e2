"""Subscriptions with a SQL92 filter: built and checked locally at ``subscribe()``, then
checked with a broker before consuming starts, as Java's ``checkClientInBroker`` does
(docs/consuming.md 7).

A 4.9.4 broker that cannot compile a pull's SQL92 subscription does not refuse the pull:
it filters nothing (``ConsumerFilterManager.build`` returns null and
``ExpressionMessageFilter`` then matches every message). So a filter the broker does not
accept must stop the consumer before its first pull; this module is where that happens.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from latency_fault import java_string_hash
from producer._remoting.consumer_requests import check_client_config_request
from producer._remoting.sql92 import compile_sql92
from producer._remoting.sql92_build import SqlParseError
from producer._remoting.subscription import Subscription, sql_subscription, tag_subscription
from producer._response_codes import ResponseCode
from producer.consumer._broker_api import HOUSEKEEPING_TIMEOUT_MS, BrokerApi
from producer.errors import BrokerError, InvalidOptionError, SqlFilterError

__all__ = ["check_in_broker", "parse_subscription", "subscription_for"]

_UNSUPPORTED = "does not support consumer to filter message"


def parse_subscription(topic: str, expression: str | None) -> Subscription:
    """A TAG subscription as the Java client builds it, its tags hashed by Java's
    ``String.hashCode`` (the one definition, ``latency_fault.java_string_hash``)."""
    return tag_subscription(topic, expression, java_string_hash)


def subscription_for(topic: str, expression: str | None, sql: str | None) -> Subscription:
    """A tag subscription, or with ``sql=`` a SQL92 one whose expression parses (else
    :class:`~producer.errors.SqlFilterError` with the broker's reason)."""
    if sql is None:
        return parse_subscription(topic, expression)
    if expression not in (None, "", "*"):
        raise InvalidOptionError(
            f"subscribe({topic!r}, {expression!r}, sql=...): filter by tags or by sql=, "
            "not both (a tag is a property too: sql=\"TAGS IN ('TagA')\")"
        )
    if not isinstance(sql, str) or not sql.strip():
        raise InvalidOptionError(f"sql={sql!r}: a SQL92 expression, e.g. \"a > 5 AND b = 'x'\"")
    try:
        compile_sql92(sql)
    except SqlParseError as exc:
        raise SqlFilterError(sql, exc.reason) from None
    return sql_subscription(topic, sql)


async def check_in_broker(
    api: BrokerApi, subscriptions: Iterable[Subscription], versions: Mapping[str, int]
) -> None:
    """CHECK_CLIENT_CONFIG of each SQL92 subscription to one broker of its topic (chosen
    at random, as ``findBrokerAddrByTopic``); a refusal raises its
    :class:`~producer.errors.BrokerError` (23: :class:`~producer.errors.SubscriptionParseError`)."""
    for subscription in subscriptions:
        if not subscription.is_sql:
            continue
        queues = api.cached(subscription.topic)
        if queues is None or not queues.broker_addrs:
            continue  # Java skips a topic without a route; its pulls wait for one too
        addr = api.rng.choice(sorted(queues.broker_addrs.values()))
        version = versions.get(subscription.topic, 0)
        request = check_client_config_request(api.client_id, api.group, subscription, version)
        response = await api.client.invoke(addr, request, HOUSEKEEPING_TIMEOUT_MS)
        if response.code == ResponseCode.SUCCESS:
            continue
        remark = response.remark or ""
        if response.code == ResponseCode.SYSTEM_ERROR and _UNSUPPORTED in remark:
            remark += " (SQL92 filters need enablePropertyFilter=true in the broker's config)"
        raise BrokerError.for_code(response.code, remark)
