"""Body codecs, chosen by sysFlag bits 8-10 (``MessageSysFlag.COMPRESSION_TYPE_COMPARATOR``).

* zlib (type 3, and 0 from pre-4.9.4 senders): the standard library, always there.
* LZ4 (type 1): the LZ4 *frame* format, as the 5.x Java client's ``Lz4Compressor``
  writes it through lz4-java's ``LZ4FrameOutputStream`` (magic ``04 22 4D 18``,
  independent 4 MiB blocks, no checksums by default).
* zstd (type 2): zstd frames, as ``ZstdCompressor`` writes them through zstd-jni's
  ``ZstdOutputStream`` (streamed: no content size in the header).

LZ4 and zstd need native packages (``lz4``, ``zstandard``), kept out of the bare install
behind the ``[compression]`` extra and imported on first use; without them a body of
that type raises :class:`~producer.errors.CodecUnavailableError` naming the extra.
Every decoder is bounded: a small hostile frame cannot make us allocate more than
``max_size`` (+1) bytes of output. Pure: no I/O, no clock.
"""

from __future__ import annotations

import enum
import importlib
import zlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

from producer.errors import CodecUnavailableError, CorruptBodyError

__all__ = ["COMPRESSION_EXTRA", "BodyCodecs", "Codec", "DEFAULT_CODECS"]

COMPRESSION_EXTRA = "compression"
_CHUNK = 64 * 1024  # zstd output is read this much at a time, to stop at the bound


class Codec(enum.IntEnum):
    """A compression type: its value is the one in sysFlag bits 8-10 (Java's
    ``CompressionType``)."""

    LZ4 = 1
    ZSTD = 2
    ZLIB = 3


Importer = Callable[[str], ModuleType]
_MODULES = {Codec.LZ4: "lz4.frame", Codec.ZSTD: "zstandard"}


class BodyCodecs:
    """Compress and decompress bodies. ``import_module`` is the seam that finds the
    optional libraries (tests pass one that refuses, as a bare install would)."""

    def __init__(self, import_module: Importer = importlib.import_module) -> None:
        self._import = import_module
        self._loaded: dict[Codec, Any] = {}

    def __repr__(self) -> str:
        return f"BodyCodecs(loaded={sorted(c.name for c in self._loaded)})"

    def require(self, codec: Codec) -> None:
        """Raise :class:`CodecUnavailableError` now if ``codec`` cannot be used."""
        if codec is not Codec.ZLIB:
            self._module(codec)

    def _module(self, codec: Codec) -> Any:
        module = self._loaded.get(codec)
        if module is None:
            name = _MODULES[codec]
            try:
                module = self._import(name)
            except ImportError:
                raise CodecUnavailableError(
                    codec.name, name.split(".")[0], COMPRESSION_EXTRA
                ) from None
            self._loaded[codec] = module
        return module

    def compress(self, body: bytes, codec: Codec, level: int) -> bytes:
        """``body`` compressed as the 5.x Java client would (LZ4 ignores ``level``)."""
        if codec is Codec.ZLIB:
            return zlib.compress(body, level)
        module = self._module(codec)
        if codec is Codec.LZ4:
            # lz4-java's frame stream: independent 4 MiB blocks, no checksums, no content
            # size (the one-shot API would shrink the block size to fit the body).
            compressor = module.LZ4FrameCompressor(
                block_size=module.BLOCKSIZE_MAX4MB, block_linked=False, content_checksum=False
            )
            return bytes(compressor.begin() + compressor.compress(body) + compressor.flush())
        return bytes(module.ZstdCompressor(level=level).compress(body))

    def decompress(self, body: bytes, codec: Codec, max_size: int | None) -> bytes:
        """The original body; corrupt, truncated or over ``max_size`` raises
        :class:`CorruptBodyError`."""
        if codec is Codec.ZLIB:
            return _inflate_zlib(body, max_size)
        module = self._module(codec)
        if codec is Codec.LZ4:
            return _inflate_lz4(module, body, max_size)
        return _inflate_zstd(module, body, max_size)


def _over(max_size: int | None, size: int) -> bool:
    return max_size is not None and size > max_size


def _too_big(codec: str, max_size: int | None) -> CorruptBodyError:
    return CorruptBodyError(f"{codec} body inflates beyond {max_size} bytes")


def _inflate_zlib(body: bytes, max_size: int | None) -> bytes:
    inflater = zlib.decompressobj()
    try:
        # One byte over the limit is enough to know it is exceeded.
        data = inflater.decompress(body, 0 if max_size is None else max_size + 1)
        if not _over(max_size, len(data)):
            data += inflater.flush()
    except zlib.error as exc:
        raise CorruptBodyError(f"corrupt zlib body: {exc}") from None
    if _over(max_size, len(data)):
        raise _too_big("zlib", max_size)
    if not inflater.eof:
        raise CorruptBodyError("truncated zlib body")
    return data


def _inflate_lz4(module: Any, body: bytes, max_size: int | None) -> bytes:
    inflater = module.LZ4FrameDecompressor()
    try:
        data = inflater.decompress(body, -1 if max_size is None else max_size + 1)
    except RuntimeError as exc:  # python-lz4 reports every frame error so
        raise CorruptBodyError(f"corrupt LZ4 frame: {exc}") from None
    if _over(max_size, len(data)):
        raise _too_big("LZ4", max_size)
    if not inflater.eof:
        raise CorruptBodyError("truncated LZ4 frame")
    return bytes(data)


def _inflate_zstd(module: Any, body: bytes, max_size: int | None) -> bytes:
    # A streaming reader stops at the bound; it does not tell a truncated frame from a
    # whole one, so the (now bounded) decompression object checks the end of the frame.
    dctx = module.ZstdDecompressor()
    try:
        reader = dctx.stream_reader(body, read_across_frames=False)
        size = 0
        while chunk := reader.read(_CHUNK):
            size += len(chunk)
            if _over(max_size, size):
                raise _too_big("zstd", max_size)
        inflater = dctx.decompressobj()
        data = inflater.decompress(body)
    except module.ZstdError as exc:
        raise CorruptBodyError(f"corrupt zstd frame: {exc}") from None
    if not inflater.eof:
        raise CorruptBodyError("truncated zstd frame")
    return bytes(data)


#: The codecs every reader and sender uses unless given others.
DEFAULT_CODECS = BodyCodecs()
