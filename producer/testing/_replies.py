"""SEND_REPLY_MESSAGE_V2 (325) on a dev broker, as 4.9.4's ``ReplyMessageProcessor`` does
it (no I/O: the push is written to the requester's channel, the answer returned).

* the header is a send's (``SendMessageRequestHeaderV2``); ``msgCheck`` applies (topic
  name, topic config, queue id), so a reply to a topic the broker lacks is refused;
* ``pushReplyMessage``: the requester's channel is the one its client id (the reply's
  ``REPLY_TO_CLIENT``) heartbeated with a producer group (``ProducerManager.findChannel``).
  Found: the reply's properties get ``PUSH_REPLY_TIME`` (HashMap order, so it comes
  first, golden #65) and PUSH_REPLY_MESSAGE_TO_CLIENT (326) goes there with the
  ``ReplyMessageRequestHeader`` fields. Not found: code 1 ``push reply message fail,
  channel of <id> not found.``; no ``REPLY_TO_CLIENT``: code 1 ``reply message
  properties[REPLY_TO_CLIENT] is null``;
* ``storeReplyMessageEnable`` (default true): the reply is also stored in the reply
  topic (as sent: no ``CLUSTER`` added, ``WAIT`` kept if sent), and the answer carries
  its offsets; otherwise ``msgId`` is ``0`` and ``queueOffset`` 0.

One difference: the real broker waits (up to 3 s) for the requester's answer to the
push and turns a non-zero answer into code 1; the dev broker, which answers from one
synchronous step, treats a written push as delivered and ignores the requester's answer.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from latency_fault import java_string_hash
from producer._remoting.command import RemotingCommand
from producer._remoting.frame_encoder import encode_frame
from producer._remoting.properties import PUSH_REPLY_TIME, REPLY_TO_CLIENT, decode_properties
from producer._remoting.reply import encode_java_map
from producer._remoting.request_codes import V4_9_4, LanguageCode, RequestCode
from producer._remoting.send_header import SendMessageRequestHeader
from producer._response_codes import ResponseCode
from producer.testing._producer_channels import ProducerChannels
from producer.testing._server import Channel
from producer.testing._store import BrokerStore, PendingMessage, StoredMessage, stored_size

__all__ = ["ReplyPusher"]


class ReplyPusher:
    """One broker's reply processing: push to the requester, then (maybe) store."""

    def __init__(
        self,
        store: BrokerStore,
        producers: ProducerChannels,
        *,
        clock_ms: Callable[[], int],
        put: Callable[[str, int, PendingMessage], StoredMessage],
    ) -> None:
        self.store = store
        self.producers = producers
        self.store_reply_message = True  # BrokerConfig.storeReplyMessageEnable
        self.version = V4_9_4  # the broker's MQVersion, in its push
        self._clock_ms = clock_ms
        self._put = put
        self._opaques = itertools.count(1)
        self.pushed: list[RemotingCommand] = []  # what went to requesters, for tests

    def process(
        self,
        request: RemotingCommand,
        header: SendMessageRequestHeader,
        queue_id: int,
        peer: str,
        trace: dict[str, str],
    ) -> RemotingCommand:
        """The answer to a checked reply send ``request`` (``processReplyMessageRequest``)."""
        body = request.body or b""
        refusal = self._push(header, body, peer)
        fields = {**trace, "msgId": "0", "queueId": str(queue_id), "queueOffset": "0"}
        if self.store_reply_message:
            stored = self._store(header, body, queue_id, peer)
            fields.update(msgId=stored.offset_msg_id, queueOffset=str(stored.queue_offset))
        if refusal is not None:
            return request.make_response(
                ResponseCode.SYSTEM_ERROR, ext_fields=fields, remark=refusal
            )
        return request.make_response(ResponseCode.SUCCESS, ext_fields=fields)

    def _push(self, header: SendMessageRequestHeader, body: bytes, peer: str) -> str | None:
        """Write the push to the requester's channel; the refusal remark if it cannot."""
        properties = decode_properties(header.properties or "")
        client_id = properties.get(REPLY_TO_CLIENT)
        if client_id is None:
            return f"reply message properties[{REPLY_TO_CLIENT}] is null"
        channel = self._channel_of(client_id)
        if channel is None:
            return f"push reply message fail, channel of <{client_id}> not found."
        store_timestamp = self._clock_ms()  # read first, as the broker does (#65: 412, 413)
        properties[PUSH_REPLY_TIME] = str(self._clock_ms())
        fields = _push_fields(
            header, encode_java_map(properties, java_string_hash), peer, self.store.store_host
        )
        fields["storeTimestamp"] = str(store_timestamp)
        push = RemotingCommand(
            RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT,
            opaque=next(self._opaques),
            ext_fields=fields,
            body=body,
            language=LanguageCode.JAVA,  # a broker's request, as the real one writes it
            version=self.version,
        )
        channel.write(encode_frame(push))
        self.pushed.append(push)
        return None

    def _channel_of(self, client_id: str) -> Channel | None:
        channel = self.producers.find(client_id)
        return channel if channel is not None and channel.is_open else None

    def _store(
        self, header: SendMessageRequestHeader, body: bytes, queue_id: int, peer: str
    ) -> StoredMessage:
        text = header.properties or ""
        properties = decode_properties(text)
        size = stored_size(len(body), len(header.topic.encode()), len(text.encode()))
        pending = PendingMessage(
            body=body,
            properties=properties,
            size=size,
            born_timestamp=header.born_timestamp,
            sys_flag=header.sys_flag,
            flag=header.flag,
            born_host=peer,
            reconsume_times=header.reconsume_times,
        )
        return self._put(header.topic, queue_id, pending)


def _push_fields(
    header: SendMessageRequestHeader, properties: str, peer: str, store_host: str
) -> dict[str, str]:
    """``ReplyMessageRequestHeader``, in the order golden #65 lists its fields."""
    return {
        "queueId": str(header.queue_id),
        "flag": str(header.flag),
        "sysFlag": str(header.sys_flag),
        "reconsumeTimes": str(header.reconsume_times),
        "storeTimestamp": "",
        "unitMode": "true" if header.unit_mode else "false",
        "defaultTopic": header.default_topic,
        "bornHost": peer,
        "defaultTopicQueueNums": str(header.default_topic_queue_nums),
        "producerGroup": header.producer_group,
        "topic": header.topic,
        "bornTimestamp": str(header.born_timestamp),
        "storeHost": store_host,
        "properties": properties,
    }
