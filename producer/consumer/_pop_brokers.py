"""Which brokers may serve a ``SimpleConsumer``'s pops: a 5.x broker (POP_MESSAGE is a 5.x
request), and for a consumer that pops out of order, a topic that is not FIFO there (its
messages would come out of order). Each broker's version is asked once (the version of
any answer: GET_MAX_OFFSET), a topic's message type once per broker (GET_TOPIC_CONFIG)."""

from __future__ import annotations

import logging

from producer._remoting.pop_requests import parse_message_type, topic_config_request
from producer._remoting.producer_requests import max_offset_request
from producer._remoting.request_codes import POP_BROKER_VERSION, version_name
from producer.consumer._broker_api import HOUSEKEEPING_TIMEOUT_MS, BrokerApi
from producer.errors import BrokerError, InvalidOptionError, PopUnsupportedError

__all__ = ["PopBrokers"]

log = logging.getLogger("producer.consumer")


class PopBrokers:
    """The checks, and what they learnt: versions by address, (address, topic) not FIFO."""

    def __init__(self, *, orderly: bool) -> None:
        self.orderly = orderly
        self._versions: dict[str, int] = {}
        self._normal_topics: set[tuple[str, str]] = set()

    def __repr__(self) -> str:
        return f"PopBrokers(versions={self._versions}, orderly={self.orderly})"

    def version(self, addr: str) -> int:
        """The broker's version, 0 while unknown."""
        return self._versions.get(addr, 0)

    async def check(self, api: BrokerApi, broker_name: str, addr: str, topic: str) -> None:
        """Raise :class:`PopUnsupportedError` for a 4.x broker, InvalidOptionError for a
        FIFO ``topic`` popped out of order."""
        version = self._versions.get(addr)
        if version is None:
            response = await api.client.invoke(
                addr, max_offset_request(topic, 0), HOUSEKEEPING_TIMEOUT_MS
            )
            version = self._versions[addr] = response.version
        if version < POP_BROKER_VERSION:
            raise PopUnsupportedError(broker_name, addr, version_name(version))
        if not self.orderly and (addr, topic) not in self._normal_topics:
            kind = await self._message_type(api, addr, topic)
            if kind == "FIFO":
                raise InvalidOptionError(
                    f"topic {topic} is a FIFO topic on broker {broker_name}: pop it with "
                    "SimpleConsumer(..., orderly=True), or its messages come out of order"
                )
            self._normal_topics.add((addr, topic))

    @staticmethod
    async def _message_type(api: BrokerApi, addr: str, topic: str) -> str:
        """The topic's 5.x message type; ``NORMAL`` when the broker will not say (an error
        answer: no such request, no permission)."""
        request = topic_config_request(topic)
        try:
            return parse_message_type(
                await api.client.invoke(addr, request, HOUSEKEEPING_TIMEOUT_MS)
            )
        except BrokerError as exc:
            log.debug("message type of %s at %s unknown: %s", topic, addr, exc)
            return "NORMAL"
