"""One connection's incoming side: its frames in order, when it was last active, whether the
client has hung up.

Requests are read one at a time (Kafka mutes a channel while its request is in flight), but a
parked request may listen for the client hanging up: :meth:`Inbound.until_closed` reads ahead at
most :data:`READ_AHEAD` bytes of whatever the client sends next, so noticing the hang-up never
buffers more than that.
"""

from __future__ import annotations

import os

import trio

from protocol.frames import FrameBuffer

#: Bytes read from the socket at a time, and the most read ahead while a request is parked.
RECEIVE = 1 << 16
READ_AHEAD = RECEIVE


class Inbound:
    def __init__(self, stream: trio.SocketStream | trio.SSLStream, max_frame: int):
        self.stream = stream
        self.tls = isinstance(stream, trio.SSLStream)
        self.frames = FrameBuffer(max_frame)
        self.closed_by_peer = False
        #: set once the connection has closed (what outlives a request, like a share session, ends)
        self.ended = trio.Event()
        self.idle = False                          # waiting for a next request (shutdown closes it)
        self._waited = False                       # the last read had to wait for the client
        self.last_active = trio.current_time()      # of either direction (Kafka's idle expiry)

    def touch(self) -> None:
        self.last_active = trio.current_time()

    async def receive(self) -> None:
        """Wait for the next bytes (or the hang-up): a reset is a hang-up too.

        Reads the socket directly and waits through trio only when it is empty: trio's
        ``receive_some`` passes through the scheduler twice per call, which costs more than
        the read. Bytes that were there at once still pass one checkpoint, so a client that
        never stops sending cannot keep the others waiting (and cancellation is seen).
        TLS streams are read through trio (the socket holds ciphertext)."""
        if self.tls:
            try:
                data = await self.stream.receive_some(RECEIVE)
            except trio.BrokenResourceError:
                data = b""
            self._got(data)
            return
        sock = self.stream.socket
        # A client that waits for each answer has sent nothing yet when we look again: for
        # it, wait first rather than try a read that finds nothing.
        data = None if self._waited else _read(sock)
        self._waited = data is None
        if data is None:
            await trio.lowlevel.wait_readable(sock)
            data = _read(sock)
            if data is None:                   # woken with nothing to read after all
                return
        else:
            await trio.lowlevel.checkpoint()
        self._got(data)

    def _got(self, data: bytes) -> None:
        self.touch()
        if data:
            self.frames.feed(data)
        else:
            self.closed_by_peer = True

    async def until_closed(self) -> None:
        """Return once the client hangs up; what it sends meanwhile waits in the frame buffer."""
        while not self.closed_by_peer:
            if self.frames.pending >= READ_AHEAD:
                await trio.sleep_forever()         # the client keeps talking: it is still there
            await self.receive()


def _read(sock) -> bytes | None:
    """What the socket holds now: None if nothing yet, b"" once the client hung up (or reset)."""
    try:
        return os.read(sock.fileno(), RECEIVE)
    except BlockingIOError:
        return None
    except OSError:
        return b""
