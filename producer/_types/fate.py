"""What the client knows about whether a failed message was stored (every error says)."""

from __future__ import annotations

import enum


class Fate(enum.Enum):
    """What the client knows about whether a failed message was stored."""

    NOT_STORED = "not_stored"
    UNKNOWN = "unknown"
