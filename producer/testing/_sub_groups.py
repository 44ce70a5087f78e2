"""A broker's subscription-group admin requests (``AdminBrokerProcessor`` of 4.9.4 and 5.2.0).

* UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200, ``mqadmin updateSubGroup``): the group's config
  (``retryMaxTimes``, ``retryQueueNums``, ``consumeEnable``, ``consumeBroadcastEnable``)
  replaces the one the broker auto-created or had, so send-backs, the dead-letter limit and
  pulls follow it. SUCCESS, remark null.
* DELETE_SUBSCRIPTIONGROUP (207, ``deleteSubGroup``): the config goes (the next use
  auto-creates the defaults again), and with ``removeOffset=true`` its committed offsets.
"""

from __future__ import annotations

from producer._remoting.admin import parse_subscription_group
from producer._remoting.command import RemotingCommand
from producer._remoting.request_codes import RequestCode
from producer._response_codes import ResponseCode
from producer.errors import RemoteProtocolError
from producer.testing._consume_fields import need
from producer.testing._groups import ConsumerOffsets, ConsumerRegistry, GroupConfig

__all__ = ["SUB_GROUP_CODES", "answer_sub_group"]

SUB_GROUP_CODES = frozenset(
    {RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, RequestCode.DELETE_SUBSCRIPTIONGROUP}
)


def answer_sub_group(
    request: RemotingCommand, registry: ConsumerRegistry, offsets: ConsumerOffsets
) -> RemotingCommand:
    """The broker's answer to one of ``SUB_GROUP_CODES``."""
    if request.code == RequestCode.DELETE_SUBSCRIPTIONGROUP:
        group = need(request, "groupName")
        registry.groups.pop(group, None)
        if (request.field("removeOffset") or "").lower() == "true":
            offsets.remove_group(group)
        return request.make_response(ResponseCode.SUCCESS)
    try:
        config = parse_subscription_group(request.body)
    except RemoteProtocolError as exc:  # fastjson's decode throws: SYSTEM_ERROR
        return request.make_response(ResponseCode.SYSTEM_ERROR, remark=str(exc))
    registry.groups[config.group_name] = GroupConfig(
        config.group_name,
        retry_max_times=config.retry_max_times,
        retry_queue_nums=config.retry_queue_nums,
        consume_enable=config.consume_enable,
        consume_broadcast_enable=config.consume_broadcast_enable,
    )
    return request.make_response(ResponseCode.SUCCESS)
