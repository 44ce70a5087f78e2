"""Fault injection for the dev cluster: the spec (data), and the per-request decision.

Pure: a :class:`FaultSpec` says what a server should do wrong; :func:`decide` turns a
spec and a seeded ``random.Random`` into what happens to one request. The listener in
``_server.py`` carries the decision out.
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from producer.errors import LocalProtocolError

__all__ = ["NOT_STORE_OK_CODES", "FaultDecision", "FaultSpec", "FaultSpecError", "decide"]

# FLUSH_DISK_TIMEOUT, SLAVE_NOT_AVAILABLE, FLUSH_SLAVE_TIMEOUT: stored, but not store-OK.
NOT_STORE_OK_CODES = frozenset({10, 11, 12})

_PROBABILITIES = ("latency_probability", "error_probability", "store_status_probability")
_BOOLEANS = ("down", "blackhole", "hang", "reset", "garbage")
_DURATIONS = ("latency_ms", "jitter_ms")


class FaultSpecError(LocalProtocolError, ValueError):
    """A fault spec that cannot be applied (bad field, type or value)."""


@dataclass(frozen=True)
class FaultSpec:
    """What one server (broker or name server) does wrong. Every field is optional.

    * ``latency_ms`` + uniform ``[0, jitter_ms)``: delay before each answer, applied with
      ``latency_probability``. The request is handled at once (stored) and only the
      answer waits, without holding up other requests or connections.
    * ``error_code`` with ``error_probability``: a send (10, 310, 320) is answered with
      this response code instead of being stored.
    * ``store_status`` (10, 11 or 12) with ``store_status_probability``: a send is stored
      but answered with that non-OK status, as a real broker does.
    * ``down``: stop listening (connects are refused) and close every connection.
    * ``blackhole``: accept connections and read requests, never answer.
    * ``hang``: a hung process (SIGSTOP, a stuck disk): as ``blackhole``, and nothing
      received before is answered either (a held pull, a late answer); connections stay
      open.
    * ``reset``: abort the connection (RST) when a request arrives.
    * ``garbage``: answer every request with a malformed frame.

    ``FaultSpec()`` is no fault at all. Draws come from the server's own seeded random
    generator, so a run with the same seed and request order makes the same choices.
    """

    latency_ms: float = 0.0
    jitter_ms: float = 0.0
    latency_probability: float = 1.0
    error_code: int | None = None
    error_probability: float = 1.0
    store_status: int | None = None
    store_status_probability: float = 1.0
    down: bool = False
    blackhole: bool = False
    hang: bool = False
    reset: bool = False
    garbage: bool = False

    def __post_init__(self) -> None:
        for name in _DURATIONS:
            value = getattr(self, name)
            if not _is_number(value) or not math.isfinite(value) or value < 0:
                raise FaultSpecError(f"{name} must be a finite number >= 0, got {value!r}")
        for name in _PROBABILITIES:
            value = getattr(self, name)
            if not _is_number(value) or not 0.0 <= value <= 1.0:
                raise FaultSpecError(f"{name} must be a number in [0, 1], got {value!r}")
        for name in _BOOLEANS:
            if not isinstance(getattr(self, name), bool):
                raise FaultSpecError(f"{name} must be true or false, got {getattr(self, name)!r}")
        code = _as_int("error_code", self.error_code)
        if code is not None and (code == 0 or not -(2**15) <= code < 2**15):
            raise FaultSpecError(f"error_code must be a non-zero int16 response code, got {code!r}")
        status = _as_int("store_status", self.store_status)
        if status is not None and status not in NOT_STORE_OK_CODES:
            raise FaultSpecError(f"store_status must be one of 10, 11, 12, got {status!r}")
        object.__setattr__(self, "error_code", code)  # plain ints, also from IntEnum codes
        object.__setattr__(self, "store_status", status)

    @property
    def is_healthy(self) -> bool:
        """True when the spec injects nothing."""
        return self == _HEALTHY

    @property
    def has_latency(self) -> bool:
        """Whether this fault delays answers at all."""
        return (self.latency_ms > 0 or self.jitter_ms > 0) and self.latency_probability > 0

    @classmethod
    def from_json(cls, data: object) -> FaultSpec:
        """Build from the JSON form (an object of the field names); :class:`FaultSpecError`
        names the offending field."""
        if not isinstance(data, Mapping):
            raise FaultSpecError("a fault spec must be a JSON object")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(str(key) for key in data if key not in known)
        if unknown:
            raise FaultSpecError(
                f"unknown fault field(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
            )
        return cls(**{str(key): value for key, value in data.items()})

    def to_json(self) -> dict[str, Any]:
        """The JSON form: only the fields that differ from no fault."""
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if getattr(self, f.name) != f.default
        }


def _as_int(name: str, value: object) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise FaultSpecError(f"{name} must be an integer response code, got {value!r}")
    return int(value)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


_HEALTHY = FaultSpec()


@dataclass(frozen=True, slots=True)
class FaultDecision:
    """What happens to one request: answer after ``delay`` seconds, with ``error_code``
    instead of handling a send, or with ``store_status`` after storing a send."""

    delay: float = 0.0
    error_code: int | None = None
    store_status: int | None = None


NO_FAULT = FaultDecision()


def decide(spec: FaultSpec, rng: random.Random, *, is_send: bool) -> FaultDecision:
    """Draw the fate of one request. Consumes the generator only for probabilistic
    fields that are set, so a healthy spec leaves the sequence untouched."""
    delay = 0.0
    if spec.has_latency and _happens(spec.latency_probability, rng):
        jitter = rng.uniform(0.0, spec.jitter_ms) if spec.jitter_ms > 0 else 0.0
        delay = (spec.latency_ms + jitter) / 1000.0
    error_code = store_status = None
    if is_send and spec.error_code is not None and _happens(spec.error_probability, rng):
        error_code = spec.error_code
    elif is_send and spec.store_status is not None and _happens(spec.store_status_probability, rng):
        store_status = spec.store_status
    if delay == 0.0 and error_code is None and store_status is None:
        return NO_FAULT
    return FaultDecision(delay, error_code, store_status)


def _happens(probability: float, rng: random.Random) -> bool:
    if probability >= 1.0:
        return True
    if probability <= 0.0:
        return False
    return rng.random() < probability
