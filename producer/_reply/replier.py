"""The replier's side of request-reply: ``Producer.send_reply``.

A reply (:func:`producer._remoting.reply.create_reply`) goes to one queue of
``<cluster>_REPLY_TOPIC`` (round robin) as SEND_REPLY_MESSAGE_V2 (325), in one attempt:
the broker pushes it to the requester before it answers, so a retry could deliver it
twice. The broker answers 0 when the push succeeded, else code 1 with its reason
(``ReplyMessageProcessor.handlePushReplyResult``) - that, and a broker that does not know
code 325, raise :class:`~producer.errors.ReplyRefusedError` naming the fix.
"""

from __future__ import annotations

from latency_fault import java_string_hash
from producer._client.clock import Clock
from producer._client.in_turn import InTurn
from producer._client.remoting import RemotingClient
from producer._client.routes import RouteTable
from producer._remoting.command import OutgoingRequest
from producer._remoting.reply import reply_send_command
from producer._remoting.send_header import parse_send_response
from producer._remoting.uniq_key import UniqKeyGenerator
from producer._response_codes import ResponseCode
from producer._types.message import MessageQueue
from producer._types.reply import Reply
from producer._types.send_result import SendResult
from producer.errors import LocalProtocolError, ReplyRefusedError


class Replier:
    """Sends replies of producer ``group`` over the producer's connections and routes."""

    def __init__(
        self,
        group: str,
        *,
        client: RemotingClient,
        routes: RouteTable,
        clock: Clock,
        uniq_keys: UniqKeyGenerator,
    ) -> None:
        self.group = group
        self._in_turn = InTurn(client=client, routes=routes, clock=clock, uniq_keys=uniq_keys)

    async def send_reply(self, reply: Reply, timeout_ms: float) -> SendResult:
        """Send ``reply``; its result names where the broker stored it."""
        if not isinstance(reply, Reply):
            raise LocalProtocolError(
                f"send_reply() takes what create_reply() returns, got {type(reply).__name__}"
            )

        def request(queue: MessageQueue, wall: int, uniq_key: str) -> OutgoingRequest:
            return reply_send_command(
                self.group, reply, uniq_key, queue.queue_id, wall, java_string_hash
            )

        queue, addr, uniq_key, response = await self._in_turn.send(reply.topic, timeout_ms, request)
        if response.code != ResponseCode.SUCCESS:
            raise _refused(response.code, response.remark, addr, reply)
        status, header = parse_send_response(response)
        return SendResult(
            status,
            uniq_key,
            header.msg_id,
            queue,
            header.queue_offset,
            header.region_id,
            header.trace_on,
            None,
            (),
        )


def _refused(code: int, remark: str | None, addr: str, reply: Reply) -> ReplyRefusedError:
    if code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
        why = (
            f"broker {addr} does not allow replies ({remark!r}): request-reply needs a "
            "broker with ReplyMessageProcessor (RocketMQ 4.6 or later)"
        )
    elif remark and "not found" in remark:
        why = (
            f"broker {addr} could not push the reply to requester {reply.reply_to_client} "
            f"({remark!r}): the requester is gone (closed, or its request timed out) or "
            "never heartbeated that broker; a reply cannot wait for it, so answer sooner "
            "than the request's TTL or let the requester retry"
        )
    else:
        why = f"broker {addr} refused the reply with code {code} ({remark!r})"
    return ReplyRefusedError(why, code=code, remark=remark)
