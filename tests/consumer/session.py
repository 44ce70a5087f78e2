"""The recorded consumer session of the Java 4.9.4 client (tests/golden/sessions)."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from producer._remoting.command import RemotingCommand
from producer._remoting.frame_decoder import decode_payload
from tests.protocol.golden import golden_dir


@cache
def session_frames() -> dict[int, dict[str, Any]]:
    path = golden_dir() / "sessions" / "consumer_4_9_4" / "frames.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"consumer session not found at {path}")
    return {f["seq"]: f for f in map(json.loads, path.read_text().splitlines())}


def session_command(seq: int) -> RemotingCommand:
    """Frame ``seq`` of the session, decoded (its raw bytes, not the JSON preview)."""
    info = session_frames()[seq]
    raw = (golden_dir() / "sessions" / "consumer_4_9_4" / info["file"]).read_bytes()
    return decode_payload(raw[4:])
