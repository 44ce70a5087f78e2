"""What ``subscribe(topic, expression)`` accepts, checked before anything starts.

A topic name follows Java's ``TopicValidator`` (``^[%|a-zA-Z0-9_-]+$``, at most 127
characters): a name no broker can hold would give a consumer with nothing to pull.

A TAG expression is tags joined by ``||`` (``"TagA || TagB"``), or ``*`` for all.
Java's ``FilterAPI.buildSubscriptionData`` accepts any text - it splits on ``||``, trims,
and takes each piece as a tag, so ``"a > 5"`` subscribes to a tag literally named
``a > 5`` and nothing ever arrives. We refuse pieces that cannot be meant as tags:
whitespace inside a tag, a single ``|``, ``*`` beside other tags, and the characters of
property filters and lists (``, = < > ! ( ) ' "``). Java's 5.x clients likewise refuse
tags that are blank or hold ``|`` (``MessageBuilderImpl.setTag``). Property filters are
SQL92 expressions, given as ``sql=`` rather than as a tag expression (docs/consuming.md 2.12).
"""

from __future__ import annotations

import re

from producer._remoting.validation import check_topic
from producer.errors import InvalidOptionError, MessageValidationError

__all__ = ["check_subscription", "check_tag_expression"]

_NOT_IN_A_TAG = re.compile(r"[\s|,=<>!()'\"]")
_TAGS_HELP = "tags joined by '||' ('TagA || TagB'), or '*' for all"


def check_subscription(topic: object, expression: object) -> None:
    """Raise InvalidOptionError unless ``topic`` is a valid topic name and ``expression``
    a TAG expression (None, ``""`` and ``"*"`` mean all)."""
    if not isinstance(topic, str) or not topic.strip():
        raise InvalidOptionError(f"subscribe(topic={topic!r}): a non-empty topic name")
    try:
        check_topic(topic)
    except MessageValidationError as exc:
        raise InvalidOptionError(f"subscribe(topic={topic!r}): {exc}") from None
    check_tag_expression(expression, "subscribe")


def check_tag_expression(expression: object, where: str) -> None:
    """Raise InvalidOptionError unless ``expression`` is a TAG expression (None, ``""`` and
    ``"*"`` mean all); ``where`` names the call in the message."""
    if expression is None:
        return
    if not isinstance(expression, str):
        raise InvalidOptionError(f"{where}(expression={expression!r}): a string, {_TAGS_HELP}")
    pieces = [piece.strip() for piece in expression.split("||")]
    tags = [piece for piece in pieces if piece]
    if "*" in tags and len(tags) > 1:
        raise InvalidOptionError(
            f"{where}(expression={expression!r}): '*' means all tags and stands alone"
        )
    bad = [tag for tag in tags if _NOT_IN_A_TAG.search(tag)]
    if bad:
        raise InvalidOptionError(
            f"{where}(expression={expression!r}): {bad[0]!r} is not a tag; a TAG "
            f"expression is {_TAGS_HELP}, and a tag holds no spaces or any of | , = < > ! "
            f"( ) ' \". To filter on message properties use an SQL92 filter: sql={expression!r}"
        )
