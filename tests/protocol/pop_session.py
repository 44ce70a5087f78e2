"""The recorded 5.2.0 pop session (``tests/golden/sessions/pop_5_2_0/b_client_api``): the
official Java client's POP/ACK/BATCH_ACK/CHANGE frames against a real 5.2.0 broker."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from producer._remoting.command import RemotingCommand
from producer._remoting.frame_decoder import decode_frame
from tests.protocol.golden import golden_dir

SESSIONS = golden_dir() / "sessions" / "pop_5_2_0"
SESSION = SESSIONS / "b_client_api"
PUSH = "a_push_consumer"  # the 5.2.0 DefaultMQPushConsumer popping (clientRebalance off)


@cache
def frames(session: str = "b_client_api") -> dict[int, dict[str, Any]]:
    lines = (SESSIONS / session / "frames.jsonl").read_text().splitlines()
    return {f["seq"]: f for f in map(json.loads, lines)}


def raw(seq: int, session: str = "b_client_api") -> bytes:
    return (SESSIONS / session / frames(session)[seq]["file"]).read_bytes()


def command(seq: int, session: str = "b_client_api") -> RemotingCommand:
    """Frame ``seq`` decoded (the length prefix stripped by the frame decoder)."""
    return decode_frame(raw(seq, session))
