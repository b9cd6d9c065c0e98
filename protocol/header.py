"""Request and response headers, and whole frames in both directions.

Header versions follow Kafka's generator: a flexible API version uses request
header v2 (client id still an INT16 string, then tagged fields) and response
header v1 (correlation id, then tagged fields); everything else uses request
v1 / response v0. ApiVersions responses always use header v0 so that any
client can read them before it knows what the broker speaks (KIP-511).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from .api_keys import ApiKey
from .exceptions import DecodeError, EncodeError, UnsupportedVersion
from .messages import REQUESTS, RESPONSES
from .wire import WireError, read_uvarint

_FIXED = struct.Struct(">hhi")      # api_key, api_version, correlation_id
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_SIZE_AND_ID = struct.Struct(">ii")


@dataclass(slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None = None


@dataclass(slots=True)
class Request:
    header: RequestHeader
    body: object


def _request_message(api_key: int, version: int):
    msg = REQUESTS.get(api_key)
    if msg is None:
        raise UnsupportedVersion(f"unknown api key {api_key}")
    if not msg.min_version <= version <= msg.max_version:
        raise UnsupportedVersion(f"{msg.name} v{version} is not supported "
                                 f"(we serve v{msg.min_version}-{msg.max_version})")
    return msg


def decode_request_header(frame: bytes) -> tuple[RequestHeader, int]:
    """Read the header of a request frame (without its size prefix); return it and the body offset.

    Unknown tagged header fields are skipped. The API key and version are not
    checked here, so a broker can still answer an ApiVersions request at a
    version it does not know.
    """
    try:
        api_key, version, correlation_id = _FIXED.unpack_from(frame, 0)
        n, = _I16.unpack_from(frame, 8)
        pos = 10
        if n < -1:
            raise DecodeError(f"negative client id length {n}", field="client_id")
        client_id = None
        if n >= 0:
            if pos + n > len(frame):
                raise DecodeError("truncated client id", field="client_id")
            client_id = frame[pos:pos + n].decode("utf-8")
            pos += n
        flexible = _flexible_headers.get((api_key, version))
        if flexible is None:
            msg = REQUESTS.get(api_key)
            flexible = msg is not None and msg.is_flexible(version)
            if msg is not None and msg.min_version <= version <= msg.max_version:
                _flexible_headers[api_key, version] = flexible      # bounded: known versions only
        if flexible and frame[pos:pos + 1] == b"\x00":
            pos += 1                                # no tagged fields: the usual header
        elif flexible:
            count, pos = read_uvarint(frame, pos, len(frame))
            for _ in range(count):
                _tag, pos = read_uvarint(frame, pos, len(frame))
                size, pos = read_uvarint(frame, pos, len(frame))
                pos += size
                if pos > len(frame):
                    raise DecodeError("truncated tagged header field", field="header tags")
    except (struct.error, WireError, UnicodeDecodeError) as e:
        raise DecodeError(f"bad request header: {e}") from None
    return RequestHeader(api_key, version, correlation_id, client_id), pos


def decode_request(frame: bytes) -> Request:
    """Decode one request frame (without its size prefix).

    Raises :class:`UnsupportedVersion` for an unknown API key or version (its
    ``header`` attribute says which, so ApiVersions can still be answered) and
    :class:`DecodeError` for anything malformed. Bytes after the body's last field are
    ignored, as Kafka's request parser ignores them; truncation is still an error.
    """
    header, pos = decode_request_header(frame)
    codec = _request_codecs.get((header.api_key, header.api_version))
    if codec is None:
        try:
            msg = _request_message(header.api_key, header.api_version)
        except UnsupportedVersion as e:
            e.header = header
            raise
        codec = _request_codecs[header.api_key, header.api_version] = msg.codec(header.api_version)
    return Request(header, codec.decode(frame, pos, lenient=True))


#: (api key, version) -> whether its request header has tagged fields (header v2).
_flexible_headers: dict = {}
#: (api key, version) -> the request codec; every request looks one up.
_request_codecs: dict = {}
#: (api key, version) -> (the response codec, its header's tagged-fields suffix).
_response_codecs: dict = {}


def _response_codec(api_key: int, version: int):
    known = _response_codecs.get((api_key, version))
    if known is None:
        flexible = api_key != ApiKey.API_VERSIONS and RESPONSES[api_key].is_flexible(version)
        known = _response_codecs[api_key, version] = (RESPONSES[api_key].codec(version),
                                                      b"\x00" if flexible else b"")
    return known


def response_header_bytes(api_key: int, version: int, correlation_id: int) -> bytes:
    return _I32.pack(correlation_id) + _response_codec(api_key, version)[1]


def encode_response_parts(api_key: int, version: int, correlation_id: int, body) -> list:
    """A framed response as chunks, record data uncopied (for ``send_all`` of each chunk)."""
    codec, tags = _response_codec(api_key, version)
    parts = codec.encode_parts(body)
    size = 4 + len(tags) + sum(map(len, parts))
    parts.insert(0, _SIZE_AND_ID.pack(size, correlation_id) + tags)
    return parts


def encode_response(api_key: int, version: int, correlation_id: int, body) -> bytes:
    """A framed response: size, header, body."""
    return b"".join(encode_response_parts(api_key, version, correlation_id, body))


def encode_request(api_key: int, version: int, correlation_id: int, body,
                   client_id: str | None = "groupbroker") -> bytes:
    """A framed request, for our own test client and tools."""
    msg = _request_message(api_key, version)
    if client_id is None:
        head = _FIXED.pack(api_key, version, correlation_id) + b"\xff\xff"
    else:
        raw = client_id.encode("utf-8")
        if len(raw) > 0x7FFF:
            raise EncodeError(f"client id too long for a request header ({len(raw)} bytes)")
        head = _FIXED.pack(api_key, version, correlation_id) + _I16.pack(len(raw)) + raw
    if msg.is_flexible(version):
        head += b"\x00"
    payload = head + msg.codec(version).encode(body)
    return _I32.pack(len(payload)) + payload


def decode_response(api_key: int, version: int, frame: bytes) -> tuple[int, object]:
    """Decode a response frame (without size prefix): (correlation id, body)."""
    msg = RESPONSES.get(api_key)
    if msg is None:
        raise UnsupportedVersion(f"unknown api key {api_key}")
    try:
        correlation_id, = _I32.unpack_from(frame, 0)
        pos = 4
        if api_key != ApiKey.API_VERSIONS and msg.is_flexible(version):
            count, pos = read_uvarint(frame, pos, len(frame))
            for _ in range(count):
                _tag, pos = read_uvarint(frame, pos, len(frame))
                size, pos = read_uvarint(frame, pos, len(frame))
                pos += size
    except (struct.error, WireError) as e:
        raise DecodeError(f"bad response header: {e}", api=msg.name, version=version) from None
    return correlation_id, msg.codec(version).decode(frame, pos)
