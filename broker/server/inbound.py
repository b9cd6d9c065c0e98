"""One connection's incoming side: its frames in order, when it was last active, whether the
client has hung up.

Requests are read one at a time (Kafka mutes a channel while its request is in flight), but a
parked request may listen for the client hanging up: :meth:`Inbound.until_closed` reads ahead at
most :data:`READ_AHEAD` bytes of whatever the client sends next, so noticing the hang-up never
buffers more than that.
"""

from __future__ import annotations

import trio

from protocol.frames import FrameBuffer

#: Bytes read from the socket at a time, and the most read ahead while a request is parked.
RECEIVE = 1 << 16
READ_AHEAD = RECEIVE


class Inbound:
    def __init__(self, stream: trio.SocketStream, max_frame: int):
        self.stream = stream
        self.frames = FrameBuffer(max_frame)
        self.closed_by_peer = False
        self.last_active = trio.current_time()      # of either direction (Kafka's idle expiry)

    def touch(self) -> None:
        self.last_active = trio.current_time()

    async def receive(self) -> None:
        """Wait for the next bytes (or the hang-up): a reset is a hang-up too."""
        try:
            data = await self.stream.receive_some(RECEIVE)
        except trio.BrokenResourceError:
            data = b""
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
