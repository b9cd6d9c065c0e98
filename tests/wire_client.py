"""A minimal Kafka client over a real trio socket, built on our own codec (for server tests)."""

from __future__ import annotations

import dataclasses
import struct
from itertools import count

import trio

from protocol import REQUESTS
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
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


async def join_stable_member(client: WireClient, group: str, *, instance_id: str | None = None,
                             session_timeout_ms: int = 1000) -> tuple[str, int]:
    """Join ``group`` alone (JoinGroup v5 with the KIP-394 round trip, then SyncGroup v3);
    returns the member id and generation of the now Stable group."""
    jg, sg = REQUESTS[ApiKey.JOIN_GROUP].cls, REQUESTS[ApiKey.SYNC_GROUP].cls
    join = jg(group_id=group, session_timeout_ms=session_timeout_ms, rebalance_timeout_ms=2000,
              member_id="", group_instance_id=instance_id, protocol_type="consumer",
              protocols=(jg.JoinGroupRequestProtocol(name="range", metadata=b""),))
    first = await client.call(ApiKey.JOIN_GROUP, 5, join)
    if first.error_code == ErrorCode.MEMBER_ID_REQUIRED:      # static members skip the round trip
        first = await client.call(ApiKey.JOIN_GROUP, 5, dataclasses.replace(join, member_id=first.member_id))
    assert first.error_code == ErrorCode.NONE, first
    synced = await client.call(ApiKey.SYNC_GROUP, 3, sg(group_id=group, generation_id=first.generation_id,
                                         member_id=first.member_id, group_instance_id=instance_id))
    assert synced.error_code == ErrorCode.NONE, synced
    return first.member_id, first.generation_id


def header(api_key: int, version: int, correlation: int, client_id: bytes = b"t") -> bytes:
    return struct.pack(">hhih", api_key, version, correlation, len(client_id)) + client_id
