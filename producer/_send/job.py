"""One send's job: what is sent (its request, built once; a transparent batch's members
and first queue). What is left to decide about it (budget, attempts, mode) is its
:class:`~producer._send.plan.SendPlan`'s; what it holds (its in-flight slot, its flush
ticket, its caller) is its :class:`~producer._send.send.Send`'s.
"""

from __future__ import annotations

import msgspec

from producer._remoting.producer_requests import PreparedMessage
from producer._types.message import Message, MessageQueue
from producer.errors import ProducerError


class SendJob(msgspec.Struct, frozen=True):
    """One send's request; its budget, attempts and mode live in its :class:`SendPlan`."""

    prepared: PreparedMessage
    message: Message
    order_key: str | None = None  # keyed: the key's queue is final (F5)
    #: A transparent batch's messages: each holds its own in-flight slot, and hooks and
    #: spans see each one. Empty for every other send.
    members: tuple[Message, ...] = ()
    #: The first attempt's queue, chosen with its neighbours' (:meth:`Sender.spread`);
    #: retries choose again.
    first_queue: MessageQueue | None = None

    @property
    def msg_ids(self) -> list[str]:
        """One id per message: a transparent batch's are comma-joined in its UNIQ_KEY."""
        return self.prepared.msg_id.split(",") if self.members else [self.prepared.msg_id]

    def messages(self) -> list[tuple[Message, str]]:
        """Each message with its id: a transparent batch's members, or the one message."""
        if self.members:
            return list(zip(self.members, self.msg_ids, strict=True))
        return [(self.message, self.prepared.msg_id)]

    def name_in(self, error: ProducerError) -> ProducerError:
        """``error`` naming the UNIQ_KEY this send went out under (to resend with), unless
        it names one already; returned for ``raise``."""
        if error.msg_id is None:
            error.msg_id = self.prepared.msg_id
        return error
