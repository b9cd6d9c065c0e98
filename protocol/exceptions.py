"""The protocol layer's own exceptions: one hierarchy, each carrying a Kafka error-code hint."""

from __future__ import annotations


class ProtocolError(Exception):
    """Base of every error raised by protocol/.

    ``error_code`` is the Kafka error code a broker should answer with where
    Kafka defines an answer (h11's ``error_status_hint`` idea); 42 is
    INVALID_REQUEST.
    """

    error_code = 42


class DecodeError(ProtocolError):
    """Bytes that are not a valid message: the peer's fault.

    ``api``, ``version`` and ``field`` say where decoding failed, as far as known.
    """

    def __init__(self, reason: str, *, api: str | None = None, version: int | None = None,
                 field: str | None = None):
        self.reason, self.api, self.version, self.field = reason, api, version, field
        where = " ".join(p for p in (
            api and f"{api}", version is not None and f"v{version}", field and f"field {field}") if p)
        super().__init__(f"{where}: {reason}" if where else reason)


class EncodeError(ProtocolError):
    """A message that cannot be written at the asked version: our own fault."""


class UnsupportedVersion(ProtocolError):
    """An API key or version outside what the registry serves."""

    error_code = 35


class FrameTooLarge(ProtocolError):
    """A frame whose declared size exceeds the configured maximum."""
