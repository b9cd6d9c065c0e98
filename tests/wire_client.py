"""A minimal Kafka client over a real trio socket, built on our own codec (for server tests)."""

from __future__ import annotations

import struct
from itertools import count

import trio

from protocol.frames import FrameBuffer
from protocol.header import decode_response, encode_request


class WireClient:
    def __init__(self, stream: trio.SocketStream, client_id: str = "wire-test"):
        self.stream, self.client_id = stream, client_id
        self.frames = FrameBuffer()
        self._correlation = count(1)

    @classmethod
    async def connect(cls, port: int, **kw) -> WireClient:
        return cls(await trio.open_tcp_stream("127.0.0.1", port), **kw)

    async def send(self, api_key: int, version: int, body) -> int:
        correlation = next(self._correlation)
        await self.stream.send_all(encode_request(api_key, version, correlation, body, self.client_id))
        return correlation

    async def send_raw(self, data: bytes) -> None:
        await self.stream.send_all(data)

    async def frame(self) -> bytes | None:
        """The next response frame, or None once the broker closed the connection."""
        while (frame := self.frames.next_frame()) is None:
            data = await self.stream.receive_some(1 << 16)
            if not data:
                return None
            self.frames.feed(data)
        return frame

    async def receive(self, api_key: int, version: int):
        frame = await self.frame()
        assert frame is not None, "connection closed by the broker"
        return decode_response(api_key, version, frame)

    async def call(self, api_key: int, version: int, body):
        correlation = await self.send(api_key, version, body)
        got, response = await self.receive(api_key, version)
        assert got == correlation
        return response

    async def closed_by_peer(self) -> bool:
        return await self.frame() is None

    async def aclose(self) -> None:
        await self.stream.aclose()


def header(api_key: int, version: int, correlation: int, client_id: bytes = b"t") -> bytes:
    return struct.pack(">hhih", api_key, version, correlation, len(client_id)) + client_id
