"""An embedded RocketMQ dev cluster for tests, demos and benchmarks.

* :class:`DevCluster` - name server + brokers on asyncio (``async with``).
* :class:`DevClusterThread` - the same on a background thread, with a synchronous,
  thread-safe API (sync tests, trio, scripts); the pytest fixture uses it.
* :class:`FaultSpec` - what a broker (or the name server) does wrong.
* :class:`Account` - an ACL account, for ``DevCluster(acl=[...])``.
* :class:`TransactionConfig` - transaction timeout / check interval / maximum checks.
* :class:`StoredMessage`, :class:`TopicConfig` - what the brokers hold.
* :func:`parse_topics` - ``"Orders:4,Audit:2"`` to ``{"Orders": 4, "Audit": 2}``.
* :data:`DEFAULT_DELAY_LEVELS` - the brokers' ``messageDelayLevel`` unless given.
* :data:`BROKER_VERSIONS` - the broker versions ``DevCluster(broker_version=)`` plays.

The command line (``python -m producer cluster``) lives in :mod:`producer.cli`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from producer.testing._acl import Account
    from producer.testing._cluster import DevCluster, parse_topics
    from producer.testing._faults import FaultSpec, FaultSpecError
    from producer.testing._store import StoredMessage, TopicConfig
    from producer.testing._thread import DevClusterThread
    from producer.testing._transaction_config import TransactionConfig

BROKER_VERSIONS: dict[str, int]
"""``DevCluster(broker_version=...)``'s choices and the version code each answers with:
``"4.9.4"`` (the default) or ``"5.x"`` (5.x's timer and pop; producer/testing/README.md)."""
DEFAULT_DELAY_LEVELS: str
"""The brokers' ``messageDelayLevel`` (``"1s 5s 10s 30s 1m ... 2h"``), as a real broker's
default; ``DevCluster(delay_levels=...)`` takes another."""

# Imported on first use: the pytest plugin (this package's, loaded on every pytest start
# of every user) must not pay for the whole dev cluster until a test asks for it.
_HOMES = {
    "DEFAULT_DELAY_LEVELS": "producer._remoting.delay_levels",  # the brokers' default
    "Account": "producer.testing._acl",
    "BROKER_VERSIONS": "producer.testing._cluster",
    "DevCluster": "producer.testing._cluster",
    "DevClusterThread": "producer.testing._thread",
    "FaultSpec": "producer.testing._faults",
    "FaultSpecError": "producer.testing._faults",
    "StoredMessage": "producer.testing._store",
    "TopicConfig": "producer.testing._store",
    "TransactionConfig": "producer.testing._transaction_config",
    "parse_topics": "producer.testing._cluster",
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # found once; later lookups do not come here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})


__all__ = [
    # clusters
    "DevCluster",
    "DevClusterThread",
    # access control
    "Account",
    # faults
    "FaultSpec",
    "FaultSpecError",
    # transactions
    "TransactionConfig",
    # stored state
    "StoredMessage",
    "TopicConfig",
    # helpers
    "BROKER_VERSIONS",
    "DEFAULT_DELAY_LEVELS",
    "parse_topics",
]
