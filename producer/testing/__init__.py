"""An embedded RocketMQ dev cluster for tests, demos and benchmarks."""

from producer.testing._cluster import DevCluster
from producer.testing._faults import FaultSpec, FaultSpecError
from producer.testing._store import StoredMessage, TopicConfig

__all__ = ["DevCluster", "FaultSpec", "FaultSpecError", "StoredMessage", "TopicConfig"]
