"""Splitting a byte stream into Kafka frames (INT32 size + payload), with a size cap."""

from __future__ import annotations

import struct

from .exceptions import DecodeError, FrameTooLarge

#: Kafka's socket.request.max.bytes default.
DEFAULT_MAX_FRAME = 100 * 1024 * 1024
_SIZE = struct.Struct(">i")


class FrameBuffer:
    """Feed it bytes as they arrive; take out complete frames.

    The declared size is checked against ``max_frame`` as soon as its four
    bytes arrive, before anything is allocated for the payload.
    """

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME):
        self.max_frame = max_frame
        self._buf = bytearray()
        self._pos = 0              # where the next frame starts (taken bytes go at the next feed)
        self._need: int | None = None

    def feed(self, data: bytes) -> None:
        if self._pos:
            del self._buf[:self._pos]
            self._pos = 0
        self._buf += data

    def next_frame(self) -> bytes | None:
        """The next complete frame payload, or None until more data arrives."""
        buf, pos = self._buf, self._pos
        if self._need is None:
            if len(buf) - pos < 4:
                return None
            size, = _SIZE.unpack_from(buf, pos)
            if size < 0 or size > self.max_frame:
                foreign = _foreign_protocol(bytes(buf[pos:pos + 4]))
                if foreign is not None:
                    raise DecodeError(foreign)
            if size < 0:
                raise DecodeError(f"negative frame size {size}")
            if size > self.max_frame:
                raise FrameTooLarge(f"frame of {size} bytes exceeds the maximum of {self.max_frame}")
            pos = self._pos = pos + 4
            self._need = size
        end = pos + self._need
        if len(buf) < end:
            return None
        frame = bytes(buf[pos:end])
        self._pos, self._need = end, None
        return frame

    @property
    def pending(self) -> int:
        """Bytes held that do not yet form a frame."""
        return len(self._buf) - self._pos


_HTTP_METHODS = (b"GET ", b"POST", b"PUT ", b"HEAD", b"DELE", b"OPTI", b"PATC", b"CONN", b"TRAC", b"PRI ")


def _foreign_protocol(head: bytes) -> str | None:
    """What a client speaking something other than Kafka sent, judged by its first 4 bytes
    (which Kafka would read as an absurd frame size)."""
    if head[0] == 0x16 and head[1] == 0x03 and head[2] <= 0x04:
        return "TLS handshake on a PLAINTEXT listener (the client is configured for SSL)"
    if head in _HTTP_METHODS:
        return f"HTTP request ({head.decode().strip()}) on a Kafka listener"
    return None
