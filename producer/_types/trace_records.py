"""Message trace records, one per traced event; ``producer._remoting.trace`` encodes and
decodes them as the 4.9.4 Java client writes them."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PubRecord", "SubAfterRecord", "SubBeforeRecord"]


@dataclass(frozen=True, slots=True)
class PubRecord:
    """A send the broker answered (``TraceType.Pub``)."""

    timestamp: int
    region_id: str | None
    group: str
    topic: str
    msg_id: str
    tags: str | None
    keys: str | None
    store_host: str
    body_length: int
    cost_ms: int
    msg_type: int
    offset_msg_id: str | None
    success: bool

    def fields(self) -> list[object]:
        """The record's fields in the Java client's order (``TraceDataEncoder``), type first."""
        return [
            "Pub", self.timestamp, self.region_id, self.group, self.topic, self.msg_id,
            self.tags, self.keys, self.store_host, self.body_length, self.cost_ms,
            self.msg_type, self.offset_msg_id, self.success,
        ]  # fmt: skip


@dataclass(frozen=True, slots=True)
class SubBeforeRecord:
    """A message handed to a listener (``TraceType.SubBefore``)."""

    timestamp: int
    region_id: str | None
    group: str
    request_id: str
    msg_id: str
    retry_times: int
    keys: str | None

    def fields(self) -> list[object]:
        """The record's fields in the Java client's order (``TraceDataEncoder``), type first."""
        return [
            "SubBefore", self.timestamp, self.region_id, self.group, self.request_id,
            self.msg_id, self.retry_times, self.keys,
        ]  # fmt: skip


@dataclass(frozen=True, slots=True)
class SubAfterRecord:
    """How the listener call ended for that message (``TraceType.SubAfter``)."""

    request_id: str
    msg_id: str
    cost_ms: int
    success: bool
    keys: str | None
    context_code: int
    timestamp: int
    group: str

    def fields(self) -> list[object]:
        """The record's fields in the Java client's order (``TraceDataEncoder``), type first."""
        return [
            "SubAfter", self.request_id, self.msg_id, self.cost_ms, self.success,
            self.keys, self.context_code, self.timestamp, self.group,
        ]  # fmt: skip
