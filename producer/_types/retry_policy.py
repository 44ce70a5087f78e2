"""Which failures a send retries, and how its time budget is split between attempts."""

from __future__ import annotations

from dataclasses import dataclass, field

from producer._response_codes import RETRIED_BY_JAVA_4_9, RETRIED_BY_JAVA_5_3, THROTTLING_CODES


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Retry rules for sends. Use a preset or build your own.

    * ``retriable_codes`` - broker response codes retried on another broker (S4).
    * ``backoff_codes`` - codes that wait a jittered back-off (inside the budget) before
      the retry; a code listed here is retried even if not in ``retriable_codes``.
    * ``attempt_timeout_share`` - S3: each attempt may use at most
      ``remaining_budget / attempts_left`` (with ``min_attempt_timeout_ms`` as a floor) so
      that a hung broker cannot eat the retries; ``None`` lets every attempt use the
      whole remaining budget, as the Java client does (rocketmq#4720).
    * ``retry_unknown_fate`` - S11: ``False`` stops at the first failure after the request
      was written (timeout, connection lost), for callers who prefer an error to a
      possible duplicate.
    * ``async_retries_broker_codes`` - A3: the Java client's async path retries only
      transport failures; ``True`` makes ``send_async`` retry like ``send``.
    """

    retriable_codes: frozenset[int] = field(default=RETRIED_BY_JAVA_5_3)
    backoff_codes: frozenset[int] = field(default=THROTTLING_CODES)
    attempt_timeout_share: bool = True
    min_attempt_timeout_ms: float = 100.0
    retry_unknown_fate: bool = True
    async_retries_broker_codes: bool = True
    backoff_base_ms: float = 20.0
    backoff_max_ms: float = 500.0
    name: str = "default"

    @classmethod
    def default(cls) -> RetryPolicy:
        """Ours: 5.3's codes, throttling back-off, a capped attempt timeout, async = sync."""
        return cls()

    @classmethod
    def java_4_9(cls) -> RetryPolicy:
        """The 4.9 Java client, rule for rule (no back-off, no attempt cap)."""
        return cls(
            retriable_codes=RETRIED_BY_JAVA_4_9,
            backoff_codes=frozenset(),
            attempt_timeout_share=False,
            async_retries_broker_codes=False,
            name="java_4_9",
        )

    @classmethod
    def java_5_3(cls) -> RetryPolicy:
        """The 5.3 Java client: 4.9 plus SYSTEM_BUSY and GO_AWAY retried."""
        return cls(
            retriable_codes=RETRIED_BY_JAVA_5_3,
            backoff_codes=frozenset(),
            attempt_timeout_share=False,
            async_retries_broker_codes=False,
            name="java_5_3",
        )

    def is_retriable_code(self, code: int) -> bool:
        """Whether a broker answer with this code is retried (at once or after a backoff)."""
        return code in self.retriable_codes or code in self.backoff_codes

    def attempt_timeout_ms(self, remaining_ms: float, attempts_left: int) -> float:
        """The network timeout of the next attempt (S2, S3)."""
        if not self.attempt_timeout_share or attempts_left <= 1:
            return remaining_ms
        # max and min as comparisons: this runs for every attempt
        share = remaining_ms / attempts_left
        if share < self.min_attempt_timeout_ms:
            share = self.min_attempt_timeout_ms
        return share if share < remaining_ms else remaining_ms

    def backoff_ms(self, retry_number: int, jitter: float) -> float:
        """Full-jitter exponential back-off; ``jitter`` is a draw from [0, 1)."""
        growth = 2.0 ** max(retry_number - 1, 0)
        ceiling: float = min(self.backoff_max_ms, self.backoff_base_ms * growth)
        return ceiling * (0.5 + 0.5 * jitter)
