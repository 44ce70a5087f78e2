"""The ``cluster`` command run in process: captured output that says when it is ready."""

from __future__ import annotations

import asyncio
import io


class Output(io.StringIO):
    """Captured output that says when the cluster announced itself."""

    def __init__(self) -> None:
        super().__init__()
        self.ready = asyncio.Event()

    def write(self, text: str) -> int:
        if "ready" in text:
            self.ready.set()
        return super().write(text)
