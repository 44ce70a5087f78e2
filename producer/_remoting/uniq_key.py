"""The client message id (``UNIQ_KEY``) in the layout of Java's ``MessageClientIDSetter``.

16 bytes as 32 upper-case hex digits::

    IPv4 (4) | pid low 16 bits (2) | instance hash (4) | ms since month start (4) | counter (2)

e.g. ``C0000202 5977 5FFD2B27 696D66FF 0000`` (golden). Java keeps one counter per JVM
that wraps at 65536 regardless of the clock, so more than 65536 ids in one millisecond
repeat; a clock stepping back can repeat them too. This generator keeps the pair
(time part, counter) strictly increasing instead: the counter runs on like Java's, the
time part never goes backwards, and when the counter wraps the time part is advanced by
one, borrowing from the future. Ids are therefore unique within one generator at any rate
and across clock steps; share one generator per process (see ``producer._client.host``).

The month start is taken in UTC (Java uses the JVM's time zone; only tools that turn an id
back into an approximate time care). Time is a parameter: nothing here reads a clock.
"""

from __future__ import annotations

import datetime
import ipaddress
import re
from typing import NamedTuple

from producer.errors import LocalProtocolError

_COUNTER_LIMIT = 1 << 16
_TIME_MASK = 0xFFFFFFFF  # Java writes an int: after ~24.8 days the value wraps negative
_HEX = re.compile(r"[0-9A-F]+")


def month_bounds(wall_ms: int) -> tuple[int, int]:
    """Start of the UTC month containing ``wall_ms`` and of the next one, in epoch ms."""
    moment = datetime.datetime.fromtimestamp(wall_ms / 1000, tz=datetime.timezone.utc)
    start = moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    year, month = (start.year + 1, 1) if start.month == 12 else (start.year, start.month + 1)
    end = start.replace(year=year, month=month)
    return int(start.timestamp()) * 1000, int(end.timestamp()) * 1000


class UniqKeyGenerator:
    """Makes ``UNIQ_KEY`` values; ``next_id(wall_ms)`` is the only per-message call.

    ``ip`` is the host's IPv4 address, ``pid`` the process id (its low 16 bits are used)
    and ``instance_hash`` a 32-bit value that tells processes apart when ip and pid
    collide (Java uses its class loader's identity hash; pass something random).
    """

    __slots__ = (
        "_counter",
        "_head",
        "_head_time",
        "_month_end",
        "_month_start",
        "_prefix",
        "_time",
    )

    def __init__(self, ip: str, pid: int, instance_hash: int) -> None:
        try:
            address = ipaddress.IPv4Address(ip)
        except ValueError as exc:
            raise LocalProtocolError(f"UNIQ_KEY needs an IPv4 address: {exc}") from None
        fixed = address.packed + (pid & 0xFFFF).to_bytes(2, "big")
        self._prefix = (fixed + (instance_hash & 0xFFFFFFFF).to_bytes(4, "big")).hex().upper()
        self._counter = 0
        self._time = -1  # time part of the last id
        self._month_start = 0
        self._month_end = -1  # forces a month computation on first use
        self._head = ""  # prefix + time digits, remade only when the time part changes
        self._head_time = -1

    @property
    def prefix(self) -> str:
        """The fixed first 20 hex digits (ip, pid, instance hash)."""
        return self._prefix

    def next_id(self, wall_ms: int) -> str:
        """A new id for a message created at epoch milliseconds ``wall_ms``."""
        if wall_ms >= self._month_end:
            self._start_month(wall_ms)
        # Behind the month start (clock stepped back) counts as 0, as in Java.
        elapsed = wall_ms - self._month_start
        if elapsed < 0:
            elapsed = 0
        if elapsed > self._time:
            self._time = elapsed
        counter = self._counter
        if counter >= _COUNTER_LIMIT:
            counter = 0
            self._time += 1  # wrapped: borrow the next millisecond
        self._counter = counter + 1
        if self._time != self._head_time:
            self._head_time = self._time
            self._head = f"{self._prefix}{self._time & _TIME_MASK:08X}"
        return f"{self._head}{counter:04X}"

    def _start_month(self, wall_ms: int) -> None:
        self._month_start, self._month_end = month_bounds(wall_ms)
        self._time = -1

    def __repr__(self) -> str:
        return (
            f"UniqKeyGenerator(prefix={self._prefix}, time={self._time}, counter={self._counter})"
        )


class UniqKeyParts(NamedTuple):
    ip: str
    pid: int
    instance_hash: int
    time_part: int  # ms since the month start (as an unsigned 32-bit value)
    counter: int


def parse_uniq_key(key: str) -> UniqKeyParts:
    """The fields of a 32-digit (IPv4) or 56-digit (IPv6) ``UNIQ_KEY``."""
    if len(key) not in (32, 56) or not _HEX.fullmatch(key.upper()):
        raise LocalProtocolError(f"{key!r} is not a 32 or 56 hex digit UNIQ_KEY")
    raw = bytes.fromhex(key)
    ip_len = len(raw) - 12
    return UniqKeyParts(
        ip=str(ipaddress.ip_address(raw[:ip_len])),
        pid=int.from_bytes(raw[ip_len : ip_len + 2], "big"),
        instance_hash=int.from_bytes(raw[ip_len + 2 : ip_len + 6], "big"),
        time_part=int.from_bytes(raw[ip_len + 6 : ip_len + 10], "big"),
        counter=int.from_bytes(raw[ip_len + 10 :], "big"),
    )
