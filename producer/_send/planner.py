"""Each send's plan, made from the producer's settings (:class:`Planner`, one per producer)."""

from __future__ import annotations

import dataclasses
import random

from producer._client.clock import Clock
from producer._send.options import ProducerOptions
from producer._send.plan import SendMode, SendPlan, max_attempts
from producer.errors import LocalProtocolError


class Planner:
    """One per producer: the settings every plan shares, read once."""

    __slots__ = ("_attempts", "_clock", "_options", "_rng")

    def __init__(self, options: ProducerOptions, clock: Clock, rng: random.Random) -> None:
        self._options = options
        self._clock = clock
        self._rng = rng
        # max_attempts per (mode, keyed), worked out once: every plan reads it.
        self._attempts = {
            (mode, keyed): max_attempts(
                mode,
                keyed=keyed,
                sync_retries=options.retry_times_when_send_failed,
                async_retries=options.retry_times_when_send_async_failed,
            )
            for mode in SendMode
            for keyed in (False, True)
        }

    def budget_ms(self, timeout_ms: float | None) -> float:
        """The call's budget: its own ``timeout_ms`` or ``send_timeout_ms``."""
        budget = self._options.send_timeout_ms if timeout_ms is None else timeout_ms
        if not budget > 0:
            raise LocalProtocolError(f"timeout_ms must be positive, got {timeout_ms!r}")
        return budget

    def plan(
        self,
        mode: SendMode,
        budget_ms: float,
        *,
        keyed: bool = False,
        deadline_ms: float | None = None,
        certain_retries_only: bool = False,
    ) -> SendPlan:
        """A fresh plan; its deadline is ``budget_ms`` from now unless given.
        ``certain_retries_only``: retry only failures that prove nothing was stored."""
        options = self._options
        attempts = self._attempts[mode, keyed]
        if deadline_ms is None:
            deadline_ms = self._clock.monotonic_ms() + budget_ms
        return SendPlan(
            mode=mode,
            policy=(
                dataclasses.replace(options.retry_policy, retry_unknown_fate=False)
                if certain_retries_only
                else options.retry_policy
            ),
            max_attempts=attempts,
            deadline_ms=deadline_ms,
            budget_ms=budget_ms,
            retry_not_store_ok=(
                options.retry_another_broker_when_not_store_ok and not certain_retries_only
            ),
            rng=self._rng,
            namespace=options.namespace,
        )
