"""Reading a group's dead-letter queue and sending chosen messages back to their topic.

``%DLQ%<group>`` is an ordinary topic (one queue per broker that dead-lettered, perm 6):
it is read here with plain pulls that carry their own subscription (no heartbeat, no
offset committed, nothing changed), from each queue's minimum offset to its maximum.
Re-driving publishes a copy to the message's original topic (its ``RETRY_TOPIC``) under
its first ``msg_id``, with a fresh retry budget: a new message starts at 0 reconsumes.
"""

from __future__ import annotations

import random
import ssl as ssl_module
from collections.abc import Mapping, Sequence
from typing import Protocol

from producer._client.clock import Clock, LoopClock
from producer._client.keywords import takes_options
from producer._lifecycle import AsyncLifecycle
from producer._remoting.consumer_requests import PullStatus
from producer._remoting.properties import RETRY_TOPIC
from producer._remoting.retry_topics import dlq_topic
from producer._remoting.validation import check_group
from producer._transport import ConnectionPool, current_runtime
from producer._types.consumer.dead_letter import DeadLetter
from producer._types.consumer.received import ReceivedMessage
from producer._types.credentials import Credentials
from producer._types.message import Message, MessageQueue
from producer._types.send_result import SendResult
from producer.consumer._broker_api import BrokerApi
from producer.consumer._connect import Identity, open_api
from producer.consumer._options import CONNECT_TIMEOUT_MS, DeadLetterOptions
from producer.consumer._pull_step import PullRequest, pull
from producer.consumer._sql_filters import parse_subscription
from producer.errors import LocalProtocolError, NoRouteError

__all__ = ["DeadLetterQueue"]

PULL_BATCH = 32


class RedriveSender(Protocol):
    """The send pipeline a re-drive needs: a started ``Producer`` fits. Typed by what it
    does, so this layer does not import the facade above it."""

    async def send(self, message: Message) -> SendResult: ...


READ_TIMEOUT_MS = 5000.0


#: A re-drive leaves a mark in the dead-letter queue itself: a small record carrying this
#: property (the re-driven msg id). Consumers never read ``%DLQ%`` topics (a real broker
#: creates them write-only), so the marks are for this tool: ``read`` folds them into
#: ``DeadLetter.redriven`` and ``redrive`` refuses a letter already re-driven.
REDRIVEN_MSG_ID = "REDRIVEN_MSG_ID"
REDRIVEN_AT_MS = "REDRIVEN_AT_MS"


class DeadLetterQueue(AsyncLifecycle):
    """``async with DeadLetterQueue("my-group", namesrv) as dlq: await dlq.read()``."""

    _kind = "dead-letter queue"
    #: The settings, built from the keywords (and checked) before ``__init__``'s body.
    options: DeadLetterOptions

    @takes_options(DeadLetterOptions, wiring=("credentials", "ssl", "clock", "rng"))
    def __init__(
        self,
        group: str,
        namesrv: str | list[str],
        *,
        credentials: Credentials | None = None,
        ssl: bool | ssl_module.SSLContext | None = None,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        connect_timeout_ms: float = CONNECT_TIMEOUT_MS,
    ) -> None:
        check_group(group, role="consumer")
        self.group = group
        self.topic = dlq_topic(group)
        timeout_ms = self.options.connect_timeout_ms
        self._who = Identity.of_tool(group, "dlq", namesrv, credentials, ssl, timeout_ms)
        self._clock = clock
        self._rng = rng or random.Random()
        self._pool: ConnectionPool | None = None
        self._api: BrokerApi | None = None

    def __repr__(self) -> str:
        return f"DeadLetterQueue({self.topic!r}, {self.state.value})"

    async def start(self) -> None:
        """Connect (``async with`` does this, and :meth:`aclose` on the way out)."""
        self._refuse_start()
        runtime = current_runtime()
        clock = self._clock = self._clock or LoopClock(runtime.loop_time)
        self._pool, self._api = await open_api(runtime, self._who, clock, self._rng)
        self._now_running()

    async def aclose(self) -> None:
        """Close the connections; ``async with`` calls it."""
        if not self._close_begins():
            return
        pool, self._pool, self._api = self._pool, None, None
        if pool is not None:
            await pool.__aexit__(None, None, None)
        self._now_closed()

    @staticmethod
    def is_redrive_mark(properties: Mapping[str, str]) -> bool:
        """Whether a record of the dead-letter queue (by its properties) is the mark a
        re-drive leaves, not a dead letter: count letters without these."""
        return REDRIVEN_MSG_ID in properties

    async def read(self, limit: int | None = None) -> list[DeadLetter]:
        """Every message of the dead-letter queue (oldest first per queue), up to ``limit``,
        each with whether it was re-driven. An empty list when the group never
        dead-lettered anything."""
        api = self._open_api()
        try:
            queues = (await api.refresh(self.topic)).queues
        except NoRouteError:
            return []  # created on the first dead letter: none yet
        records: list[ReceivedMessage] = []
        for queue in queues:  # whole queues: a mark comes after its letter
            records += await self._read_queue(api, queue)
        marks = {
            m.properties[REDRIVEN_MSG_ID]: int(m.properties.get(REDRIVEN_AT_MS, "0"))
            for m in records
            if self.is_redrive_mark(m.properties)
        }
        letters = [
            DeadLetter(m, m.properties.get(RETRY_TOPIC), marks.get(m.msg_id))
            for m in records
            if not self.is_redrive_mark(m.properties)
        ]
        return letters if limit is None else letters[:limit]

    async def find(self, msg_ids: Sequence[str]) -> list[DeadLetter]:
        """The dead letters with these ids; raises if one is not in the queue."""
        by_id = {letter.msg_id: letter for letter in await self.read()}
        missing = [i for i in msg_ids if i not in by_id]
        if missing:
            raise LocalProtocolError(f"not in {self.topic}: {', '.join(missing)}")
        return [by_id[i] for i in msg_ids]

    async def redrive(
        self, letters: Sequence[DeadLetter], producer: RedriveSender, *, again: bool = False
    ) -> list[SendResult]:
        """Publish each letter's copy to its original topic through ``producer`` (a
        :class:`~producer.Producer`: anything whose ``send`` the caller already owns), then
        mark it re-driven in the dead-letter queue. A letter already re-driven is refused
        (all are checked before the first is sent: :meth:`redrive_copies`) unless ``again``."""
        results = []
        for copy in self.redrive_copies(letters, again=again):
            results.append(await producer.send(copy))
            await producer.send(self._mark(copy))
        return results

    @staticmethod
    def redrive_copies(letters: Sequence[DeadLetter], *, again: bool = False) -> list[Message]:
        """The copy of each letter that :meth:`redrive` publishes, every letter checked
        before any is sent: one re-driven already is refused unless ``again`` (a letter
        goes back to its topic once, unless asked for), as is one whose topic is unknown
        or whose body did not decode (:meth:`DeadLetter.redrive_message`). Raises
        :class:`~producer.errors.LocalProtocolError` naming the letters and the fix."""
        done = [letter.msg_id for letter in letters if letter.redriven]
        if done and not again:
            raise LocalProtocolError(
                f"already re-driven: {', '.join(done)}; re-drive them again with again=True "
                "(--again), or leave them out"
            )
        return [letter.redrive_message() for letter in letters]

    def _mark(self, copy: Message) -> Message:
        assert self._clock is not None  # set on entry, as the API the caller opened
        now_ms = self._clock.wall_ms()
        properties = {REDRIVEN_MSG_ID: copy.msg_id or "", REDRIVEN_AT_MS: str(now_ms)}
        return Message(self.topic, b"re-driven", properties=properties)

    async def _read_queue(self, api: BrokerApi, queue: MessageQueue) -> list[ReceivedMessage]:
        offset, end = await api.min_offset(queue), await api.max_offset(queue)
        ask = PullRequest(self.group, PULL_BATCH, suspend_ms=0, request_timeout_ms=READ_TIMEOUT_MS)
        every = parse_subscription(queue.topic, "*")
        found: list[ReceivedMessage] = []
        while offset < end:
            answer = await pull(api, ask, queue, offset, every)
            if answer.status is not PullStatus.FOUND:
                break
            found += answer.messages
            offset = answer.next_begin_offset
        return found

    def _open_api(self) -> BrokerApi:
        if self._api is None:
            raise self._not_running()
        return self._api
