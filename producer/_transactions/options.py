"""A :class:`producer.TransactionProducer`'s settings: names, types, defaults and checks
written once (its constructor's keywords are checked against them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from producer._client.keywords import Keyword, dataclass_keywords
from producer.errors import InvalidOptionError

__all__ = ["TransactionOptions"]


@dataclass(frozen=True, slots=True)
class TransactionOptions:
    """How checks are answered: ``check_timeout_ms`` bounds one check (then UNKNOWN),
    ``check_workers`` run at once, ``max_pending_checks`` wait; ``topics`` are announced
    at start."""

    check_timeout_ms: float = 3000.0
    check_workers: int = 1
    max_pending_checks: int = 2000
    topics: Sequence[str] = ()

    def __post_init__(self) -> None:
        if self.check_workers < 1 or self.max_pending_checks < 1 or not self.check_timeout_ms > 0:
            raise InvalidOptionError(
                "check_workers and max_pending_checks must be >= 1 and check_timeout_ms > 0"
            )
        object.__setattr__(self, "topics", tuple(self.topics))

    @classmethod
    def keywords(cls) -> Mapping[str, Keyword]:
        """The transaction producer's option keywords: one per field."""
        return dataclass_keywords(cls)

    @classmethod
    def from_keywords(cls, given: Mapping[str, object]) -> TransactionOptions:
        """The options from the keywords given, checked."""
        return cls(**given)  # type: ignore[arg-type]  # checked by __post_init__
