"""The client side of one Kafka connection, without I/O.

Requests go out as framed bytes with increasing correlation ids; bytes that come back are fed
in and come out as decoded responses, matched to the requests in order (Kafka answers a
connection's requests in the order they were sent). The transports around it — a blocking
socket for command-line tools, a trio stream for tests — only move bytes. It also holds the
API versions negotiated with the broker through ApiVersions.
"""

from __future__ import annotations

import struct
from collections import deque
from itertools import count

from .api_keys import ApiKey
from .errors import ErrorCode
from .exceptions import ProtocolError
from .frames import FrameBuffer
from .header import decode_response, encode_request
from .messages import REQUESTS

_HEAD = struct.Struct(">ihhi")      # a framed request's size, api key, api version, correlation id


class ClientSession:
    def __init__(self, client_id: str | None = "groupbroker"):
        self.client_id = client_id
        self.frames = FrameBuffer()
        self._correlation = count(1)
        self._in_flight: deque[tuple[int, int, int]] = deque()   # (correlation, api key, version)
        self.versions: dict[int, int] = {}                       # api key -> version to use

    def request(self, api_key: int, version: int, body) -> tuple[int, bytes]:
        """The correlation id and framed bytes of one request (now in flight)."""
        correlation = next(self._correlation)
        data = encode_request(api_key, version, correlation, body, self.client_id)
        self._in_flight.append((correlation, api_key, version))
        return correlation, data

    def template(self, api_key: int, version: int, body) -> bytes:
        """A request encoded once, to send many times through :meth:`stamp` (load generators)."""
        return encode_request(api_key, version, 0, body, self.client_id)

    def stamp(self, template: bytes) -> tuple[int, bytes]:
        """The correlation id and bytes of a :meth:`template` sent again (now in flight)."""
        size, api_key, version, _ = _HEAD.unpack_from(template)
        correlation = next(self._correlation)
        self._in_flight.append((correlation, api_key, version))
        return correlation, _HEAD.pack(size, api_key, version, correlation) + template[_HEAD.size:]

    def feed(self, data: bytes) -> None:
        self.frames.feed(data)

    def next_frame(self) -> bytes | None:
        """The next whole response frame, undecoded (its request is then answered)."""
        frame = self.frames.next_frame()
        if frame is not None and self._in_flight:
            self._in_flight.popleft()
        return frame

    def next_response(self) -> tuple[int, object] | None:
        """The oldest request's (correlation id, decoded response), once all of it is here."""
        if not self._in_flight:
            return None
        frame = self.frames.next_frame()
        if frame is None:
            return None
        correlation, api_key, version = self._in_flight.popleft()
        got, response = decode_response(api_key, version, frame)
        if got != correlation:
            raise ProtocolError(f"response for correlation id {got}, expected {correlation}")
        return got, response

    @property
    def in_flight(self) -> int:
        return len(self._in_flight)

    @property
    def awaited(self) -> tuple[int, int, int] | None:
        """(correlation id, api key, version) of the request the next response answers."""
        return self._in_flight[0] if self._in_flight else None

    # --- versions ---------------------------------------------------------------------------
    @staticmethod
    def api_versions_request(version: int, software: str = "groupbroker"):
        cls = REQUESTS[ApiKey.API_VERSIONS].cls
        if version >= 3:
            return cls(client_software_name=software, client_software_version="1")
        return cls()

    def negotiated(self, answer) -> None:
        """Use, for each API both sides know, the highest version both speak."""
        if answer.error_code != ErrorCode.NONE:
            raise ProtocolError(f"ApiVersions failed: {ErrorCode.lookup(answer.error_code).name}")
        self.versions = {}
        for entry in answer.api_keys:
            mine = REQUESTS.get(entry.api_key)
            if mine is None:
                continue
            top = min(mine.max_version, entry.max_version)
            if top >= max(mine.min_version, entry.min_version):
                self.versions[entry.api_key] = top
