"""Where a consumer's offsets live between runs.

Clustering: on the broker (``RemoteBrokerOffsetStore``): queried when a queue is taken,
written every few seconds (oneway) and at close (acknowledged). Broadcasting: in a local
file, as Java's ``LocalFileOffsetStore`` keeps them, since every member consumes every
message and the broker holds no offset for them. The file is
``<dir>/<client id>/<group>/offsets.json``, written whole to a temporary file and
renamed, so a crash leaves the old or the new table, never half of one.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Protocol

import anyio

from producer._types.message import MessageQueue
from producer.consumer._broker_api import BrokerApi
from producer.errors import InvalidOptionError, ProducerError

__all__ = ["DEFAULT_OFFSET_DIR", "BrokerOffsets", "LocalOffsets", "OffsetStore"]

log = logging.getLogger("producer.consumer")

DEFAULT_OFFSET_DIR = Path.home() / ".rocketmq_offsets"  # rocketmq.client.localOffsetStoreDir


class OffsetStore(Protocol):
    async def open(self) -> None:
        """Ready to read (a local store loads its file)."""

    async def read(self, queue: MessageQueue) -> int | None:
        """The stored offset of ``queue``, or ``None`` when there is none."""

    async def persist(self, offsets: dict[MessageQueue, int], *, final: bool) -> None:
        """Store ``offsets`` (``final``: at close, waiting until they are stored)."""


class BrokerOffsets:
    def __init__(self, api: BrokerApi) -> None:
        self.api = api

    def __repr__(self) -> str:
        return f"BrokerOffsets({self.api.group})"

    async def open(self) -> None:
        pass

    async def read(self, queue: MessageQueue) -> int | None:
        return await self.api.query_offset(queue)

    async def persist(self, offsets: dict[MessageQueue, int], *, final: bool) -> None:
        for queue, offset in offsets.items():
            try:
                await self.api.persist(queue, offset, oneway=not final)
            except ProducerError as exc:
                log.log(logging.WARNING if final else logging.DEBUG, "offset of %s: %s", queue, exc)


class LocalOffsets:
    """One group's offsets in a file (its I/O runs in a worker thread)."""

    def __init__(self, directory: Path, client_id: str, group: str) -> None:
        self.path = directory / client_id.replace(os.sep, "_") / group / "offsets.json"
        self._table: dict[MessageQueue, int] | None = None

    def __repr__(self) -> str:
        return f"LocalOffsets({str(self.path)!r})"

    async def open(self) -> None:
        self._table = await anyio.to_thread.run_sync(self.load)

    async def read(self, queue: MessageQueue) -> int | None:
        if self._table is None:
            await self.open()
        assert self._table is not None
        return self._table.get(queue)

    async def persist(self, offsets: dict[MessageQueue, int], *, final: bool) -> None:
        try:
            await anyio.to_thread.run_sync(self.save, offsets)
        except OSError as exc:
            log.warning("offsets not written to %s: %s", self.path, exc)

    def load(self) -> dict[MessageQueue, int]:
        """The stored table; empty when there is no file yet."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        try:
            entries = json.loads(text)["offsets"]
            return {
                MessageQueue(e["topic"], e["broker_name"], int(e["queue_id"])): int(e["offset"])
                for e in entries
            }
        except (ValueError, KeyError, TypeError) as exc:
            raise InvalidOptionError(
                f"{self.path} is not an offsets file ({exc!r}): move it away to start afresh"
            ) from None

    def save(self, offsets: dict[MessageQueue, int]) -> None:
        entries = [
            {"topic": q.topic, "broker_name": q.broker_name, "queue_id": q.queue_id, "offset": o}
            for q, o in sorted(offsets.items(), key=lambda item: str(item[0]))
        ]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_suffix(".json.tmp")
        temporary.write_text(json.dumps({"offsets": entries}, indent=1), encoding="utf-8")
        os.replace(temporary, self.path)
