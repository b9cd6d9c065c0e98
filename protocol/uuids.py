"""Kafka's text form of a Uuid (topic ids, member ids): URL-safe base64 of its 16 bytes,
without padding, 22 characters (Kafka's Uuid.toString)."""

from __future__ import annotations

import base64
import uuid


def kafka_uuid(value: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode("ascii")
