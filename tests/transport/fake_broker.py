"""A scripted remoting peer on ``127.0.0.1:0`` for the transport tests.

Built on anyio so one server serves every backend under test (asyncio, uvloop, trio).
Its behaviour is plain attributes, set before or during a test:

* ``answer``: ``"echo"`` answers each request at once; ``"hold"`` keeps requests until
  :meth:`answer_held` (or until ``release_at`` are held, then answers them all in one
  write, shuffled with a seeded rng); ``"never"`` keeps them forever.
* ``close_after``: close the connection on receiving the N-th request (no answer).
* ``garbage_after``: on the N-th request, answer with bytes that are no frame.
* ``push_first``: a request frame to send the client before each response (the broker's
  CHECK_TRANSACTION_STATE kind), which the client must ignore.
* ``stall_reading``: do not call ``receive`` until :meth:`resume_reading` (anyio on
  asyncio still reads into memory; :class:`SilentPeer` is the peer that truly never reads).
* ``hostile``: a function of each request giving the byte chunks to answer with instead,
  each written on its own (a drip when they are single bytes); ``reset_after_hostile``
  then aborts the connection with a reset.

Responses echo the request's ``echo`` ext field, so a test can tell them apart.
"""

from __future__ import annotations

import random
import socket
from collections.abc import Callable
from typing import Literal

import anyio
import anyio.abc
from anyio.abc import SocketAttribute

from producer._remoting.command import RemotingCommand
from producer._remoting.frame_decoder import FrameDecoder
from producer._remoting.frame_encoder import encode_frame
from producer._remoting.request_codes import FLAG_RESPONSE
from producer.errors import RemoteProtocolError

GARBAGE = b"\x00\x00\x00\x02no"  # a frame length of 2 is below the minimum of 4

_GONE = (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)


def echo_response(request: RemotingCommand) -> RemotingCommand:
    return request.make_response(0, ext_fields={"echo": request.field("echo") or ""})


class FakeBroker:
    def __init__(self) -> None:
        self.answer: Literal["echo", "hold", "never"] = "echo"
        self.release_at: int | None = None
        self.seed = 20240607
        self.close_after: int | None = None
        self.garbage_after: int | None = None
        self.push_first: RemotingCommand | None = None
        self.stall_reading = False
        self.hostile: Callable[[RemotingCommand], list[bytes]] | None = None
        self.reset_after_hostile = False
        self.requests: list[RemotingCommand] = []
        self.client_answers: list[RemotingCommand] = []  # answers to push_first requests
        self.answered: list[int] = []  # opaques of held requests, in the order answered
        self.chunks = 0  # receive() calls that returned data
        self.connections = 0
        self.port = 0
        self._held: list[tuple[anyio.abc.ByteStream, RemotingCommand]] = []
        self._streams: list[anyio.abc.ByteStream] = []
        self._progress = anyio.Event()  # replaced each time a request arrives
        self._reading = anyio.Event()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def start(self, group: anyio.abc.TaskGroup) -> None:
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
        self.port = listener.extra(SocketAttribute.local_port)
        group.start_soon(listener.serve, self._serve)

    # -- what tests await ----------------------------------------------------------------

    async def wait_requests(self, count: int) -> None:
        """Until at least ``count`` requests (all connections) have arrived."""
        while len(self.requests) < count:
            await self._progress.wait()

    def resume_reading(self) -> None:
        self._reading.set()

    async def answer_held(self, order: Literal["fifo", "reverse", "shuffle"] = "fifo") -> None:
        held, self._held = self._held, []
        if order == "reverse":
            held.reverse()
        elif order == "shuffle":
            random.Random(self.seed).shuffle(held)
        by_stream: dict[anyio.abc.ByteStream, list[bytes]] = {}
        for stream, request in held:
            self.answered.append(request.opaque)
            by_stream.setdefault(stream, []).append(encode_frame(echo_response(request)))
        for stream, frames in by_stream.items():
            await stream.send(b"".join(frames))

    async def drop_connections(self) -> None:
        """Close every accepted connection (the client sees EOF)."""
        streams, self._streams = self._streams, []
        for stream in streams:
            await stream.aclose()

    async def send_raw(self, data: bytes) -> None:
        for stream in self._streams:
            await stream.send(data)

    # -- serving -------------------------------------------------------------------------

    async def _serve(self, stream: anyio.abc.ByteStream) -> None:
        self.connections += 1
        self._streams.append(stream)
        decoder = FrameDecoder()
        async with stream:
            try:
                if self.stall_reading:
                    await self._reading.wait()
                while True:
                    data = await stream.receive()
                    self.chunks += 1
                    for request in decoder.feed(data):
                        if not await self._on_request(stream, request):
                            return
            except (*_GONE, RemoteProtocolError):
                return

    async def _on_request(self, stream: anyio.abc.ByteStream, request: RemotingCommand) -> bool:
        """Handle one request; False when this connection is to end."""
        if request.flag & FLAG_RESPONSE:
            self.client_answers.append(request)
            return True
        self.requests.append(request)
        progress, self._progress = self._progress, anyio.Event()
        progress.set()
        count = len(self.requests)
        if count == self.close_after:
            return False
        if count == self.garbage_after:
            await stream.send(GARBAGE)
            return True
        if self.hostile is not None:
            return await self._answer_hostile(stream, request, self.hostile)
        if request.is_oneway or self.answer == "never":
            return True
        if self.answer == "hold":
            self._held.append((stream, request))
            if self.release_at is not None and len(self._held) >= self.release_at:
                await self.answer_held("shuffle")
            return True
        frames = [] if self.push_first is None else [encode_frame(self.push_first)]
        frames.append(encode_frame(echo_response(request)))
        await stream.send(b"".join(frames))
        return True

    async def _answer_hostile(
        self,
        stream: anyio.abc.ByteStream,
        request: RemotingCommand,
        hostile: Callable[[RemotingCommand], list[bytes]],
    ) -> bool:
        for chunk in hostile(request):
            await stream.send(chunk)
            await anyio.lowlevel.checkpoint()  # one chunk per write, not coalesced
        if not self.reset_after_hostile:
            return True
        raw = stream.extra(SocketAttribute.raw_socket)
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        await stream.aclose()
        return False


class SilentPeer:
    """A listening socket that accepts and never reads: the client's buffers fill up.

    The kernel completes the handshake without ``accept``; :meth:`reset` accepts and closes
    with unread data, which sends the client a reset.
    """

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(5)
        self.address = f"127.0.0.1:{self._listener.getsockname()[1]}"

    def answer(self, count: int) -> None:
        """Blocking (run it in a thread): accept, read ``count`` requests, echo them all."""
        peer, _ = self._listener.accept()
        with peer:
            peer.settimeout(10)
            decoder, requests = FrameDecoder(), list[RemotingCommand]()
            while len(requests) < count:
                requests += decoder.feed(peer.recv(1 << 20))
            peer.sendall(b"".join(encode_frame(echo_response(r)) for r in requests))
            peer.shutdown(socket.SHUT_WR)
            while peer.recv(1 << 16):  # until the client closes, so nothing is reset
                pass

    def reset(self) -> None:
        peer, _ = self._listener.accept()
        peer.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        peer.close()

    def close(self) -> None:
        self._listener.close()


async def wait_until(predicate: Callable[[], bool]) -> None:
    """Yield to other tasks and callbacks until ``predicate()`` holds (no timed sleeps)."""
    while not predicate():
        await anyio.lowlevel.checkpoint()
