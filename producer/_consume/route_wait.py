"""Subscribed topics the name servers have no route for yet, and when to ask again.

A consumer subscribed to a topic that does not exist yet (or not on these name servers)
has nothing to pull. Java notices only at its next rebalance (20 s) or route poll (30 s);
we ask for the missing route again about every second at first (``FIRST_ASKS`` asks),
then back off, doubling up to ``MAX_DELAY_MS``: a topic created while its consumer waits
is found within about a second, and a consumer waiting for ever costs one name-server
request per missing topic every 30 s (docs/consuming.md 2.12). Pure: the shell asks, logs
and sleeps.
"""

from __future__ import annotations

__all__ = ["FIRST_ASKS", "FIRST_DELAY_MS", "MAX_DELAY_MS", "MissingRoutes", "ask_delay_ms"]

FIRST_DELAY_MS = 1000.0
FIRST_ASKS = 10
MAX_DELAY_MS = 30_000.0  # the heartbeat's route refresh would find it then anyway


def ask_delay_ms(misses: int) -> float:
    """The wait before asking again for a route missed ``misses`` times in a row."""
    if misses <= FIRST_ASKS:
        return FIRST_DELAY_MS
    return min(FIRST_DELAY_MS * 2.0 ** (misses - FIRST_ASKS), MAX_DELAY_MS)


class MissingRoutes:
    """The topics without a route, each with how many asks in a row missed it."""

    def __init__(self) -> None:
        self._misses: dict[str, int] = {}

    def __repr__(self) -> str:
        return f"MissingRoutes({self._misses})"

    @property
    def topics(self) -> list[str]:
        """The topics still without a route, in the order they were first missed."""
        return list(self._misses)

    def missed(self, topic: str) -> bool:
        """An ask found no route for ``topic``; True the first time in a row (warn then)."""
        misses = self._misses.get(topic, 0)
        self._misses[topic] = misses + 1
        return misses == 0

    def found(self, topic: str) -> bool:
        """An ask found ``topic``'s route; True if it had been missing."""
        return self._misses.pop(topic, None) is not None

    def delay_ms(self) -> float | None:
        """How long until the missing routes are asked for again; None if none is."""
        if not self._misses:
            return None
        return ask_delay_ms(min(self._misses.values()))
