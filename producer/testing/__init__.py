"""An embedded RocketMQ dev cluster for tests, demos and benchmarks.

* :class:`DevCluster` - name server + brokers on asyncio (``async with``).
* :class:`DevClusterThread` - the same on a background thread, with a synchronous,
  thread-safe API (sync tests, trio, scripts); the pytest fixture uses it.
* :class:`FaultSpec` - what a broker (or the name server) does wrong.
* :class:`Account` - an ACL account, for ``DevCluster(acl=[...])``.
* :class:`TransactionConfig` - transaction timeout / check interval / maximum checks.
* :class:`StoredMessage`, :class:`TopicConfig` - what the brokers hold.
* :func:`parse_topics` - ``"Orders:4,Audit:2"`` to ``{"Orders": 4, "Audit": 2}``.

The command line (``python -m producer cluster``) lives in :mod:`producer.cli`.
"""

from producer.testing._acl import Account
from producer.testing._cluster import DevCluster, parse_topics
from producer.testing._faults import FaultSpec, FaultSpecError
from producer.testing._store import StoredMessage, TopicConfig
from producer.testing._thread import DevClusterThread
from producer.testing._transactions import TransactionConfig

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
    "parse_topics",
]
