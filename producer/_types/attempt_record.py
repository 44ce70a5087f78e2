"""One attempt of one send, as an error (and a send's result) carries it: where it went
and how it ended."""

from __future__ import annotations

import enum

import msgspec


class AttemptOutcome(enum.Enum):
    """How one attempt ended, as far as the client could tell."""

    OK = "ok"
    NOT_STORED_OK = "not_store_ok"  # FLUSH_DISK_TIMEOUT / FLUSH_SLAVE_TIMEOUT / SLAVE_NOT_AVAILABLE
    BROKER_ERROR = "broker_error"
    CONNECT_ERROR = "connect_error"
    CONNECTION_LOST = "connection_lost"
    TIMEOUT = "timeout"
    PROTOCOL_ERROR = "protocol_error"
    CANCELLED = "cancelled"


class AttemptRecord(msgspec.Struct, frozen=True):
    """One attempt of one send: where it went and what came back."""

    broker_name: str
    queue_id: int
    outcome: AttemptOutcome
    code: int | None
    latency_ms: float

    def __str__(self) -> str:
        code = "" if self.code is None else f" code={self.code}"
        return (
            f"{self.broker_name}/q{self.queue_id}: {self.outcome.value}{code} "
            f"in {self.latency_ms:.1f} ms"
        )
