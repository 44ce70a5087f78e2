"""Access to the golden frames in ``tests/golden`` (see its README).

A missing directory is an error, not a skip: these frames are the ground truth.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

GOLDEN_DIR = Path(__file__).resolve().parents[1] / "golden"


def golden_dir() -> Path:
    if not (GOLDEN_DIR / "index.json").is_file():
        raise FileNotFoundError(f"golden frames not found at {GOLDEN_DIR} (tests/golden)")
    return GOLDEN_DIR


@dataclass(frozen=True)
class GoldenFrame:
    name: str  # e.g. "java-json/06_send_sync_keys_tags_property.request"
    raw: bytes
    info: dict[str, Any]

    @property
    def run(self) -> str:
        return self.name.split("/", 1)[0]


@cache
def all_frames() -> tuple[GoldenFrame, ...]:
    root = golden_dir()
    frames = []
    for entry in json.loads((root / "index.json").read_text()):
        for file in entry["files"]:
            frames.append(
                GoldenFrame(
                    name=file["json"].removesuffix(".json"),
                    raw=(root / file["bin"]).read_bytes(),
                    info=json.loads((root / file["json"]).read_text()),
                )
            )
    return tuple(frames)


def frame(name: str) -> GoldenFrame:
    for candidate in all_frames():
        if candidate.name == name:
            return candidate
    raise KeyError(name)


def frame_names() -> list[str]:
    """Names for parametrize; if the directory is missing this raises at collection."""
    return [f.name for f in all_frames()]
