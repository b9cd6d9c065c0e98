"""Kafka's text form of a Uuid (topic ids, member ids): URL-safe base64 of its 16 bytes,
without padding, 22 characters (Kafka's Uuid.toString)."""

from __future__ import annotations

import base64
import uuid


def kafka_uuid(value: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode("ascii")


def parse_kafka_uuid(text: str) -> uuid.UUID:
    """Kafka's Uuid.fromString: URL-safe base64 of 16 bytes (padding optional); ValueError if not."""
    if len(text) > 24:
        raise ValueError(f"Input string with prefix `{text[:24]}` is too long to be decoded as a base64 UUID")
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except ValueError:
        raise ValueError(f"Invalid base64 UUID: {text!r}") from None
    if len(raw) != 16:
        raise ValueError(f"Unexpected length {len(raw)} of a base64 UUID")
    return uuid.UUID(bytes=raw)
