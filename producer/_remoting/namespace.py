"""Namespaces: the names a namespaced client puts on the wire, as Java's ``NamespaceUtil``.

``ClientConfig.setNamespace("nsA")`` makes every topic and group ``nsA%name``; the retry
and dead-letter topics keep their prefix in front (``%RETRY%nsA%group``,
``%DLQ%nsA%group``). System topics (``TopicValidator.isSystemTopic``: the fixed set and
``rmq_sys_*``) and system groups (``CID_RMQ_SYS_*``) are never wrapped, nor is a name that
already carries the namespace. A namespaced producer also sends the property
``INSTANCE_ID=<namespace>`` with every message (golden c_namespace #63). Users see their
own names: results and received messages are unwrapped (``withoutNamespace``).
"""

from __future__ import annotations

import re

from producer._remoting.retry_topics import DLQ_PREFIX, RETRY_PREFIX
from producer._types.message import MessageQueue
from producer.errors import InvalidOptionError

__all__ = [
    "MAX_NAMESPACE_LENGTH",
    "check_namespace",
    "namespaced_group",
    "unwrap",
    "unwrap_queue",
    "wrap",
    "wrap_queue",
]

SEPARATOR = "%"
# A namespaced group's retry topic, %RETRY%<ns>%<group>, must still be a legal topic
# (127 characters): with a one-character group, a namespace has 127 - 7 - 1 - 1 = 118.
MAX_NAMESPACE_LENGTH = 118
_TOPIC_MAX_LENGTH = 127
_NAMESPACE_CHARS = re.compile(r"[a-zA-Z0-9_-]+")  # the name charset, less '%' and '|'
_SYSTEM_TOPICS = frozenset(
    {
        "TBW102",
        "SCHEDULE_TOPIC_XXXX",
        "BenchmarkTest",
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "RMQ_SYS_TRACE_TOPIC",
        "RMQ_SYS_TRANS_OP_HALF_TOPIC",
        "TRANS_CHECK_MAX_TIME_TOPIC",
        "SELF_TEST_TOPIC",
        "OFFSET_MOVED_EVENT",
    }
)


def check_namespace(namespace: object) -> str | None:
    """``None`` (no namespace), or a valid one; else :class:`InvalidOptionError`."""
    if namespace is None:
        return None
    if not isinstance(namespace, str) or not namespace:
        raise InvalidOptionError(
            f"namespace={namespace!r}: a non-empty name such as 'nsA', or None for none"
        )
    if len(namespace) > MAX_NAMESPACE_LENGTH:
        raise InvalidOptionError(
            f"namespace of {len(namespace)} characters: at most {MAX_NAMESPACE_LENGTH}, so "
            "that %RETRY%<namespace>%<group> stays within the 127-character topic limit"
        )
    if not _NAMESPACE_CHARS.fullmatch(namespace):
        raise InvalidOptionError(
            f"namespace={namespace!r}: letters, digits, '_' and '-' only "
            "('%' separates it from the name on the wire)"
        )
    return namespace


def _is_system(resource: str) -> bool:
    return (
        resource in _SYSTEM_TOPICS
        or resource.startswith("rmq_sys_")
        or resource.startswith("CID_RMQ_SYS_")
    )


def _split_prefix(resource: str) -> tuple[str, str]:
    for prefix in (RETRY_PREFIX, DLQ_PREFIX):
        if resource.startswith(prefix):
            return prefix, resource[len(prefix) :]
    return "", resource


def wrap(namespace: str | None, resource: str) -> str:
    """``NamespaceUtil.wrapNamespace``: ``nsA%Topic``, ``%RETRY%nsA%Group``."""
    if not namespace or not resource or _is_system(resource):
        return resource
    prefix, bare = _split_prefix(resource)
    if bare.startswith(namespace + SEPARATOR):
        return resource  # already wrapped
    return f"{prefix}{namespace}{SEPARATOR}{bare}"


def unwrap(resource: str, namespace: str | None) -> str:
    """``NamespaceUtil.withoutNamespace(resource, namespace)``: the user's name back
    (``nsA%Topic`` -> ``Topic``, ``%RETRY%nsA%Group`` -> ``%RETRY%Group``); a name of
    another namespace, or of none, is left as it is."""
    if not namespace or not resource or _is_system(resource):
        return resource
    prefix, bare = _split_prefix(resource)
    if not bare.startswith(namespace + SEPARATOR):
        return resource
    return prefix + bare[len(namespace) + 1 :]


def wrap_queue(namespace: str | None, queue: MessageQueue) -> MessageQueue:
    """``queue`` as the wire names it (``nsA%Topic``); wrapping twice is a no-op."""
    if not namespace:
        return queue
    return MessageQueue(wrap(namespace, queue.topic), queue.broker_name, queue.queue_id)


def unwrap_queue(queue: MessageQueue, namespace: str | None) -> MessageQueue:
    """``queue`` as its user names it (see :func:`unwrap`)."""
    if not namespace:
        return queue
    return MessageQueue(unwrap(queue.topic, namespace), queue.broker_name, queue.queue_id)


def namespaced_group(namespace: str | None, group: str) -> str:
    """A consumer group in its namespace; its ``%RETRY%`` topic must be a legal topic."""
    wrapped = wrap(namespace, group)
    if namespace and len(RETRY_PREFIX + wrapped) > _TOPIC_MAX_LENGTH:
        raise InvalidOptionError(
            f"group {group!r} in namespace {namespace!r}: its retry topic "
            f"{RETRY_PREFIX + wrapped!r} is over {_TOPIC_MAX_LENGTH} characters; "
            "use a shorter namespace or group"
        )
    return wrapped
