"""Subscriptions: tags (``"TagA || TagB"``, Java's tag hash codes, matching) or SQL92.

A broker filters a pull by the **hash** of each message's tag (the consume queue keeps
``tags.hashCode()``), so hashes that collide let foreign tags through; the client then
re-filters by the exact tag string (``PullAPIWrapper.processPullResult``). Both halves
live here so that the dev cluster and the consumer agree on them. The hash itself is
passed in (``tag_hash``: Java's ``String.hashCode``, defined once in ``latency_fault``,
which keyed sends use too): the wire core imports no routing package.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "SQL92",
    "SUBSCRIBE_ALL",
    "TAG",
    "Subscription",
    "sql_subscription",
    "tag_subscription",
]

SUBSCRIBE_ALL = "*"
TAG, SQL92 = "TAG", "SQL92"  # ExpressionType
_TAG_SEPARATOR = "||"


@dataclass(frozen=True, slots=True)
class Subscription:
    """One topic's subscription as the heartbeat carries it (``SubscriptionData``).

    ``tags`` is empty for "everything" (``*``) and for SQL92; ``codes`` are their Java
    hash codes. A SQL92 subscription is filtered by the broker alone (docs/consuming.md 7).
    """

    topic: str
    expression: str
    tags: tuple[str, ...]
    codes: tuple[int, ...]
    expression_type: str = TAG

    @property
    def is_sql(self) -> bool:
        return self.expression_type == SQL92

    @property
    def is_all(self) -> bool:
        return not self.tags

    def matches_code(self, tags_code: int, has_tags: bool) -> bool:
        """The broker's hash filter: ``*``, an untagged message, or a known code pass."""
        return self.is_all or not has_tags or tags_code in self.codes

    def matches(self, tag: str | None) -> bool:
        """The client's exact re-filter (only when the subscription names tags)."""
        return self.is_all or (tag is not None and tag in self.tags)


def tag_subscription(
    topic: str, expression: str | None, tag_hash: Callable[[str], int]
) -> Subscription:
    """``FilterAPI.buildSubscriptionData`` for a TAG expression, each tag's code its
    ``tag_hash`` (Java's ``String.hashCode``).

    ``None``, ``""`` and ``"*"`` mean everything; otherwise tags are split on ``||``,
    trimmed, and empty pieces dropped (a duplicate tag is kept once).
    """
    text = (expression or "").strip()
    if not text or text == SUBSCRIBE_ALL:
        return Subscription(topic, SUBSCRIBE_ALL, (), ())
    tags: list[str] = []
    for piece in text.split(_TAG_SEPARATOR):
        tag = piece.strip()
        if tag and tag not in tags:
            tags.append(tag)
    if not tags:
        return Subscription(topic, SUBSCRIBE_ALL, (), ())
    return Subscription(topic, expression or text, tuple(tags), tuple(map(tag_hash, tags)))


def sql_subscription(topic: str, sql: str) -> Subscription:
    """A SQL92 subscription (``FilterAPI.build`` for SQL92: no tags, no codes); the
    expression is checked by :func:`producer._remoting.sql92.compile_sql92` before."""
    return Subscription(topic, sql, (), (), SQL92)
