"""A Kafka connection over a blocking socket: what `groupbroker groups`, the examples and the
benchmarks' setup use. Imports no trio."""

from __future__ import annotations

import socket
import struct

from protocol.api_keys import ApiKey
from protocol.client import ClientSession
from protocol.errors import ErrorCode
from protocol.header import decode_response
from protocol.messages import REQUESTS


class ConnectionFailed(ConnectionError):
    """The broker could not be reached, or the connection broke."""


class BlockingClient:
    def __init__(self, host: str, port: int, *, client_id: str = "groupbroker",
                 timeout: float = 30.0):
        self.address = f"{host}:{port}"
        try:
            self.sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as e:
            raise ConnectionFailed(f"cannot connect to {self.address}: {e.strerror or e}") from None
        self.session = ClientSession(client_id)

    def close(self) -> None:
        self.sock.close()

    def send(self, api_key: int, version: int, body) -> int:
        correlation, data = self.session.request(api_key, version, body)
        self._sendall(data)
        return correlation

    def receive(self):
        """The answer to the oldest request in flight."""
        while (answer := self.session.next_response()) is None:
            self._fill()
        return answer[1]

    def call(self, api_key: int, version: int, body):
        self.send(api_key, version, body)
        return self.receive()

    def negotiate(self) -> dict[int, int]:
        """ApiVersions at our highest version, again at the broker's if it asks (KIP-511);
        the versions to use are then in ``session.versions``."""
        version = REQUESTS[ApiKey.API_VERSIONS].max_version
        for _ in range(2):
            self.send(ApiKey.API_VERSIONS, version, self.session.api_versions_request(version))
            frame = self._frame()
            error, = struct.unpack_from(">h", frame, 4)
            if error != ErrorCode.UNSUPPORTED_VERSION:
                break
            _, answer = decode_response(ApiKey.API_VERSIONS, 0, frame)
            theirs = {k.api_key: k.max_version for k in answer.api_keys}
            version = min(version, theirs.get(ApiKey.API_VERSIONS, 0))
        _, answer = decode_response(ApiKey.API_VERSIONS, version, frame)
        self.session.negotiated(answer)
        return self.session.versions

    def _frame(self) -> bytes:
        while (frame := self.session.next_frame()) is None:
            self._fill()
        return frame

    def _fill(self) -> None:
        try:
            data = self.sock.recv(1 << 16)
        except OSError as e:
            raise ConnectionFailed(f"connection to {self.address} failed: {e}") from None
        if not data:
            raise ConnectionFailed(f"{self.address} closed the connection")
        self.session.feed(data)

    def _sendall(self, data: bytes) -> None:
        try:
            self.sock.sendall(data)
        except OSError as e:
            raise ConnectionFailed(f"connection to {self.address} failed: {e}") from None
