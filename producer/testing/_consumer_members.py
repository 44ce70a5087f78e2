"""A broker's consumer membership, as 4.9.4 keeps it (``ConsumerManager``; no I/O):
heartbeats register each group's members and their subscriptions (and create
``%RETRY%<group>``), unregistering, closed channels and silence remove them, and every
change of a group's members is told to them all with NOTIFY_CONSUMER_IDS_CHANGED, a
oneway request the broker starts (``DefaultConsumerIdsChangeListener``).
GET_CONSUMER_LIST_BY_GROUP answers from the same table.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import msgspec

from producer._remoting.command import RemotingCommand
from producer._remoting.frame_encoder import encode_frame
from producer._remoting.request_codes import FLAG_ONEWAY, RequestCode
from producer._remoting.retry_topics import retry_topic
from producer._response_codes import ResponseCode
from producer.testing._consume_fields import (
    ConsumerDataWire,
    Refused,
    need,
    registered_subscription,
)
from producer.testing._filters import ConsumerFilters
from producer.testing._groups import ConsumerRegistry, RegisteredConsumer
from producer.testing._server import Channel

__all__ = ["ConsumerMembers"]


class ConsumerMembers:
    """Who consumes in each group (``registry``, shared with the pull checks) and the
    filters their subscriptions registered (``filters``)."""

    def __init__(
        self,
        registry: ConsumerRegistry,
        filters: ConsumerFilters,
        clock_ms: Callable[[], int],
        ensure_topic: Callable[[str, int], None],
    ) -> None:
        self.registry, self.filters = registry, filters
        self._clock_ms = clock_ms
        self._ensure_topic = ensure_topic  # the retry topic, made at the first heartbeat
        self._opaques = itertools.count(1)

    def heartbeat(
        self,
        client_id: str,
        consumers: Sequence[object],
        channel: Channel,
        *,
        language: str = "JAVA",
        version: int = 0,
    ) -> None:
        """Register the heartbeat's consumer groups; notify groups whose membership changed.
        ``language`` and ``version`` are the heartbeat's header's (the connection list)."""
        now = self._clock_ms()
        for raw in consumers:
            try:
                data = msgspec.convert(raw, ConsumerDataWire)
            except msgspec.ValidationError:
                continue
            group = self.registry.group(data.groupName)
            assert group is not None
            self._ensure_topic(retry_topic(data.groupName), group.retry_queue_nums)
            consumer = RegisteredConsumer(
                client_id,
                channel,
                data.messageModel,
                {s.topic: (registered_subscription(s), s.subVersion) for s in data.subscriptions},
                now,
                consume_type=data.consumeType,
                consume_from_where=data.consumeFromWhere,
                language=language,
                version=version,
            )
            if self.registry.register(data.groupName, consumer):
                self.notify(data.groupName)
            self.filters.register(data.groupName, data.subscriptions)

    def unregister(self, group: str, client_id: str) -> None:
        if self.registry.unregister(group, client_id):
            self.notify(group)

    def drop_channel(self, channel: Channel) -> None:
        """A closed connection's members leave their groups."""
        for group in self.registry.drop_channel(channel):
            self.notify(group)

    def expire(self, now_ms: int) -> None:
        """Members silent too long leave their groups."""
        for group in self.registry.expire(now_ms):
            self.notify(group)

    def notify(self, group: str) -> None:
        """NOTIFY_CONSUMER_IDS_CHANGED to every member (oneway, the broker's own opaque)."""
        for member in self.registry.members(group):
            command = RemotingCommand(
                RequestCode.NOTIFY_CONSUMER_IDS_CHANGED,
                opaque=next(self._opaques),
                flag=FLAG_ONEWAY,
                ext_fields={"consumerGroup": group},
            )
            if member.channel.is_open:
                member.channel.write(encode_frame(command))

    def consumer_list(self, request: RemotingCommand) -> RemotingCommand:
        """GET_CONSUMER_LIST_BY_GROUP: the group's client ids, refused when it has none."""
        group = need(request, "consumerGroup")
        ids = self.registry.client_ids(group)
        if not ids:
            raise Refused(ResponseCode.SYSTEM_ERROR, f"no consumer for this group, {group}")
        body = msgspec.json.encode({"consumerIdList": ids})
        return request.make_response(ResponseCode.SUCCESS, ext_fields={}, body=body)
