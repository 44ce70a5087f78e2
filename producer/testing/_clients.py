"""HEART_BEAT and UNREGISTER_CLIENT on a broker: who its clients are (no I/O).

Producers are kept with the connection they heartbeat on (transaction checks go there);
consumers are handed to the consume side.
"""

from __future__ import annotations

import msgspec

from producer._remoting.command import RemotingCommand
from producer._remoting.request_codes import LanguageCode
from producer._response_codes import ResponseCode
from producer.testing._consume_side import ConsumeSide
from producer.testing._producer_channels import ProducerChannels
from producer.testing._server import Channel

__all__ = ["answer_heartbeat", "answer_unregister"]

_REMOTING_EXCEPTION = "org.apache.rocketmq.remoting.exception.RemotingCommandException"


class _HeartbeatBody(msgspec.Struct):
    clientID: str  # noqa: N815 - wire name
    producerDataSet: list[dict[str, object]] = []  # noqa: N815 - wire name
    consumerDataSet: list[dict[str, object]] = []  # noqa: N815 - wire name


_heartbeat_decoder = msgspec.json.Decoder(_HeartbeatBody)


def answer_heartbeat(
    request: RemotingCommand, channel: Channel, producers: ProducerChannels, consume: ConsumeSide
) -> RemotingCommand:
    try:
        heartbeat = _heartbeat_decoder.decode(request.body)
    except msgspec.DecodeError as exc:
        remark = f"HeartbeatData decode failed: {exc}"
        return request.make_response(ResponseCode.SYSTEM_ERROR, remark=remark)
    groups = [p.get("groupName") for p in heartbeat.producerDataSet]
    producers.heartbeat(heartbeat.clientID, [g for g in groups if isinstance(g, str)], channel)
    if heartbeat.consumerDataSet:
        consume.members.heartbeat(
            heartbeat.clientID,
            heartbeat.consumerDataSet,
            channel,
            language=_language_name(request.language),
            version=request.version,
        )
    return request.make_response(ResponseCode.SUCCESS)


def answer_unregister(
    request: RemotingCommand, producers: ProducerChannels, consume: ConsumeSide
) -> RemotingCommand:
    client_id = request.field("clientID")
    if client_id is None:
        remark = f"{_REMOTING_EXCEPTION}: the custom field <clientID> is null"
        return request.make_response(ResponseCode.SYSTEM_ERROR, remark=remark)
    consumer_group = request.field("consumerGroup")
    if consumer_group:
        consume.members.unregister(consumer_group, client_id)
    producers.unregister(client_id, request.field("producerGroup") or "")
    return request.make_response(ResponseCode.SUCCESS, ext_fields={})


def _language_name(code: int) -> str:
    """``LanguageCode`` by name, as the broker keeps a client's (unknown: ``OTHER``)."""
    try:
        return LanguageCode(code).name
    except ValueError:
        return LanguageCode.OTHER.name
