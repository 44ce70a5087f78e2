"""A client's life-cycle states: every client (producer, consumers, the dead-letter tool)
moves through them, and ``producer._lifecycle`` holds the moves."""

from __future__ import annotations

import enum

__all__ = ["LifecycleState"]


class LifecycleState(enum.Enum):
    """Where a client is in its life: new -> running (``start``) -> closing -> closed
    (``aclose``; a client never started goes from new to closed)."""

    NEW = "new"
    RUNNING = "running"
    CLOSING = "closing"
    CLOSED = "closed"
