"""The recorded 5.2.0 pop session (``tests/golden/sessions/pop_5_2_0/b_client_api``): the
official Java client's POP/ACK/BATCH_ACK/CHANGE frames against a real 5.2.0 broker."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from producer._remoting.command import RemotingCommand
from producer._remoting.frame import decode_frame
from tests.protocol.golden import golden_dir

SESSION = golden_dir() / "sessions" / "pop_5_2_0" / "b_client_api"


@cache
def frames() -> dict[int, dict[str, Any]]:
    lines = (SESSION / "frames.jsonl").read_text().splitlines()
    return {f["seq"]: f for f in map(json.loads, lines)}


def raw(seq: int) -> bytes:
    return (SESSION / frames()[seq]["file"]).read_bytes()


def command(seq: int) -> RemotingCommand:
    """Frame ``seq`` decoded (the length prefix stripped by the frame decoder)."""
    return decode_frame(raw(seq))
