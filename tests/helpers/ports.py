"""A loopback port nothing listens on (bound, read, then closed), for tests of a name
server or broker that is not there."""

from __future__ import annotations

import socket


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
