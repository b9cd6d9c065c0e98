"""A Kafka connection over a trio stream: what the tests and benchmarks drive a broker with,
including bytes no real client would send."""

from __future__ import annotations

import trio

from protocol.client import ClientSession


class TrioClient:
    def __init__(self, stream: trio.SocketStream, client_id: str = "groupbroker"):
        self.stream = stream
        self.session = ClientSession(client_id)

    @classmethod
    async def connect(cls, port: int, host: str = "127.0.0.1", **kwargs) -> TrioClient:
        return cls(await trio.open_tcp_stream(host, port), **kwargs)

    async def send(self, api_key: int, version: int, body) -> int:
        """Send one request; its correlation id."""
        correlation, data = self.session.request(api_key, version, body)
        await self.stream.send_all(data)
        return correlation

    async def send_raw(self, data: bytes) -> None:
        await self.stream.send_all(data)

    async def frame(self) -> bytes | None:
        """The next response frame, undecoded; None once the broker closed the connection."""
        while (frame := self.session.next_frame()) is None:
            if not await self._fill():
                return None
        return frame

    async def receive(self) -> tuple[int, object]:
        """The oldest request's (correlation id, decoded response)."""
        while (answer := self.session.next_response()) is None:
            if not await self._fill():
                raise ConnectionError("connection closed by the broker")
        return answer

    async def call(self, api_key: int, version: int, body):
        await self.send(api_key, version, body)
        return (await self.receive())[1]

    async def closed_by_peer(self) -> bool:
        return await self.frame() is None

    async def aclose(self) -> None:
        await self.stream.aclose()

    async def _fill(self) -> bool:
        data = await self.stream.receive_some(1 << 16)
        if data:
            self.session.feed(data)
        return bool(data)
