"""Long polling's waiting room: pulls a broker holds until a message arrives or they time
out (``PullRequestHoldService``)."""

from __future__ import annotations

from dataclasses import dataclass

from producer._remoting.command import RemotingCommand
from producer.testing._server import Channel


@dataclass
class HeldPull:
    request: RemotingCommand
    channel: Channel
    deadline_ms: float


class HeldPulls:
    """Held pulls per (topic, queue). Timeouts are found exactly at each tick, or with
    ``check_ms`` as 4.9.4 finds them: at checks that far apart on a cadence of their own
    (the first ``check_ms`` after ``start_ms``), so a pull times out up to that much late."""

    def __init__(self, *, start_ms: float, check_ms: float | None = None) -> None:
        self._held: dict[tuple[str, int], list[HeldPull]] = {}
        self._check_ms = check_ms
        self._next_check_ms = start_ms + (check_ms or 0)

    def __len__(self) -> int:
        return sum(len(pulls) for pulls in self._held.values())

    def hold(self, topic: str, queue_id: int, pull: HeldPull) -> None:
        self._held.setdefault((topic, queue_id), []).append(pull)

    def snapshot(self) -> dict[str, dict[int, list[int]]]:
        """The queue offsets the held pulls ask for: ``{topic: {queue_id: [offset, ...]}}``."""
        view: dict[str, dict[int, list[int]]] = {}
        for (topic, queue_id), held in self._held.items():
            if held:
                asked = [int((h.request.ext_fields or {})["queueOffset"]) for h in held]
                view.setdefault(topic, {})[queue_id] = asked
        return view

    def take(self, topic: str, queue_id: int) -> list[HeldPull]:
        """The pulls held on a queue a message just arrived in, released."""
        return self._held.pop((topic, queue_id), [])

    def drop_channel(self, channel: Channel) -> None:
        for key, held in list(self._held.items()):
            self._held[key] = [h for h in held if h.channel is not channel]

    def timed_out(self, now_ms: float) -> list[HeldPull]:
        """The pulls whose time ran out by the last check at or before ``now_ms``, released."""
        checked_at = self._last_check(now_ms)
        if checked_at is None:
            return []
        expired: list[HeldPull] = []
        for key, held in list(self._held.items()):
            due = [h for h in held if h.deadline_ms <= checked_at]
            if due:
                expired += due
                self._held[key] = [h for h in held if h.deadline_ms > checked_at]
        return expired

    def _last_check(self, now_ms: float) -> float | None:
        interval = self._check_ms
        if interval is None:
            return now_ms
        if now_ms < self._next_check_ms:
            return None
        while self._next_check_ms <= now_ms:
            self._next_check_ms += interval
        return self._next_check_ms - interval
