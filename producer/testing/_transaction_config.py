"""A broker's transaction settings (``BrokerConfig`` of 4.9.4 and 5.x) and the op
batching each version does."""

from __future__ import annotations

from dataclasses import dataclass

from producer._remoting.request_codes import V5_0_0

__all__ = ["V5_OP_BATCH_INTERVAL_MS", "TransactionConfig", "op_batch_interval"]

#: BrokerConfig.transactionOpBatchInterval of 5.x (4.9.4 has no batching: 0).
V5_OP_BATCH_INTERVAL_MS = 3000


@dataclass(frozen=True)
class TransactionConfig:
    """``transactionTimeOut``, ``transactionCheckInterval``, ``transactionCheckMax``
    (BrokerConfig of 4.9.4, with its defaults), and 5.x's ``transactionOpBatchInterval``
    (``op_batch_interval_ms``; ``None``: as the broker's version does, 0 on 4.9.4 - each
    op record written at once - and 3000 on 5.x)."""

    timeout_ms: int = 6_000
    interval_ms: int = 60_000
    check_max: int = 15
    op_batch_interval_ms: int | None = None

    def __post_init__(self) -> None:
        for name in ("timeout_ms", "interval_ms"):
            if getattr(self, name) <= 0:
                raise ValueError(f"transaction {name} must be > 0, got {getattr(self, name)}")
        if self.check_max < 0:
            raise ValueError(f"transaction check_max must be >= 0, got {self.check_max}")
        if self.op_batch_interval_ms is not None and self.op_batch_interval_ms < 0:
            raise ValueError(f"op_batch_interval_ms must be >= 0, got {self.op_batch_interval_ms}")


def op_batch_interval(config: TransactionConfig, broker_version: int) -> int:
    """The op batching a broker of ``broker_version`` does, unless ``config`` sets it."""
    if config.op_batch_interval_ms is not None:
        return config.op_batch_interval_ms
    return V5_OP_BATCH_INTERVAL_MS if broker_version >= V5_0_0 else 0
