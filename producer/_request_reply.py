"""A running producer's request-reply (Java's ``request``): the requester, whose table
of requests awaits the replies brokers push to us, and the replier, which sends a
consumer's reply (SEND_REPLY_MESSAGE_V2). Requests go out through the producer's own
send path; built by ``Producer.start``, closed by ``Producer.aclose``."""

from __future__ import annotations

import random
from collections.abc import Callable

import anyio
import msgspec

from producer._client.clock import Clock
from producer._remoting.command import RemotingCommand
from producer._remoting.producer_requests import PreparedMessage
from producer._remoting.uniq_key import UniqKeyGenerator
from producer._reply.replier import Replier
from producer._reply.requester import Requester
from producer._send.job import SendJob
from producer._send.plan import SendMode
from producer._send.running import Running
from producer._types.consumer.received import ReceivedMessage
from producer._types.message import Message
from producer._types.reply import Reply
from producer._types.send_result import SendResult
from producer.errors import LocalProtocolError, ProducerClosedError

#: A producer's way to its running parts (or its error) and to a prepared message.
OpenRunning = Callable[[], Running]
Prepare = Callable[[Message], PreparedMessage]


class RequestReply:
    """The request-reply ends of one started producer (see the module's docstring)."""

    __slots__ = ("_open", "_prepare", "replier", "requester")

    def __init__(
        self,
        running: Running,
        *,
        group: str,
        client_id: str,
        clock: Clock,
        rng: random.Random,
        uniq_keys: UniqKeyGenerator,
        open_running: OpenRunning,
        prepare: Prepare,
    ) -> None:
        client, routes = running.upkeep.client, running.upkeep.routes
        self.requester = Requester(
            group=group,
            client_id=client_id,
            routes=routes,
            client=client,
            clock=clock,
            rng=rng,
            tg=running.tg,
        )
        self.replier = Replier(
            group, client=client, routes=routes, clock=clock, uniq_keys=uniq_keys
        )
        self._open = open_running
        self._prepare = prepare

    async def ask(self, message: Message, timeout_ms: float) -> ReceivedMessage:
        """``message`` sent as a request; its reply, within ``timeout_ms``."""
        running = self._open()
        _check_timeout(timeout_ms)
        return await self._ask(running, self._prepare(message), message, timeout_ms)

    def ask_soon(
        self,
        message: Message,
        on_reply: Callable[[ReceivedMessage], object],
        on_exception: Callable[[BaseException], object],
        timeout_ms: float,
    ) -> None:
        """:meth:`ask` as a task of the producer, its outcome handed to one callback (a bad
        message raises here, not in the callback)."""
        running = self._open()
        prepared = self._prepare(message)
        running.tg.start_soon(
            self._ask_task, running, prepared, message, on_reply, on_exception, timeout_ms
        )

    async def _ask(
        self, running: Running, prepared: PreparedMessage, message: Message, timeout_ms: float
    ) -> ReceivedMessage:
        async def send(properties_of: Callable[[str], str], budget_ms: float) -> object:
            request = msgspec.structs.replace(
                prepared, properties=properties_of(prepared.properties)
            )
            return await running.run(SendJob(request, message), SendMode.SYNC, budget_ms)

        return await self.requester.ask(prepared.topic, timeout_ms, send)

    async def _ask_task(
        self,
        running: Running,
        prepared: PreparedMessage,
        message: Message,
        on_reply: Callable[[ReceivedMessage], object],
        on_exception: Callable[[BaseException], object],
        timeout_ms: float,
    ) -> None:
        try:
            _check_timeout(timeout_ms)
            reply = await self._ask(running, prepared, message, timeout_ms)
        except anyio.get_cancelled_exc_class():
            on_exception(ProducerClosedError("the producer closed before the reply came"))
            raise
        except Exception as exc:
            on_exception(exc)
        else:
            on_reply(reply)

    async def send_reply(self, reply: Reply, budget_ms: float) -> SendResult:
        """A consumer's reply sent, in one attempt within ``budget_ms``."""
        return await self.replier.send_reply(reply, budget_ms)

    def receive(self, address: str, command: RemotingCommand) -> RemotingCommand:
        """A reply pushed to us (PUSH_REPLY_MESSAGE_TO_CLIENT), handed to its request."""
        return self.requester.receive(address, command)

    def close(self) -> None:
        """Every request still awaiting a reply fails: the producer is closing."""
        self.requester.close()

    def __repr__(self) -> str:
        return f"RequestReply({self.requester!r})"


def _check_timeout(timeout_ms: float) -> None:
    if not isinstance(timeout_ms, int | float) or not timeout_ms > 0:
        raise LocalProtocolError(f"timeout_ms must be a positive number, got {timeout_ms!r}")
