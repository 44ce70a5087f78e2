"""The recorded transaction session (``tests/golden/sessions/tx_4_9_4``): the official
4.9.4 Java client and hand-made probes against a real 4.9.4 broker."""

from __future__ import annotations

import json
from typing import Any

from producer._remoting.command import RemotingCommand
from producer._remoting.frame_decoder import decode_frame
from tests.protocol.golden import golden_dir

SESSION = golden_dir() / "sessions" / "tx_4_9_4"


def frames() -> dict[int, dict[str, Any]]:
    lines = (SESSION / "frames.jsonl").read_text().splitlines()
    return {f["seq"]: f for f in map(json.loads, lines)}


def raw(frame: dict[str, Any]) -> bytes:
    return (SESSION / frame["file"]).read_bytes()


def command(seq: int) -> RemotingCommand:
    return decode_frame(raw(frames()[seq]))


def offset_of(offset_msg_id: str) -> int:
    return int(offset_msg_id[-16:], 16)
