"""Versioned payloads carried inside group messages (consumer-protocol subscription and assignment).

On the wire they are an INT16 version followed by the body at that version.
Kafka lets newer clients append fields, so a version above the highest we
know is read as the highest we know and the unknown tail is ignored, as
Kafka's ``ConsumerProtocol`` does.
"""

from __future__ import annotations

import struct

from .exceptions import DecodeError
from .schema import Message

_VERSION = struct.Struct(">h")


def decode_payload(msg: Message, data: bytes) -> tuple[int, object]:
    """(version found in the payload, decoded body)."""
    if len(data) < 2:
        raise DecodeError("payload shorter than its version prefix", api=msg.name)
    version, = _VERSION.unpack_from(data, 0)
    if version < msg.min_version:
        raise DecodeError(f"unknown payload version {version}", api=msg.name, version=version)
    if version <= msg.max_version:
        return version, msg.codec(version).decode(data, 2)
    return version, msg.codec(msg.max_version).decode_prefix(data, 2)


def encode_payload(msg: Message, version: int, body) -> bytes:
    return _VERSION.pack(version) + msg.codec(version).encode(body)
