"""Typed failures of the offsets log, so callers can map them to Kafka error codes."""

from __future__ import annotations


class OffsetsLogError(Exception):
    """Base class of every offsets-log failure."""


class RecordError(OffsetsLogError):
    """A ``__consumer_offsets`` key or value that cannot be built or parsed."""


class RecordTooLargeError(RecordError):
    """A record larger than the log may hold (Kafka's RecordTooLargeException): refused whole,
    nothing written, the log keeps working."""


class LogFailedError(OffsetsLogError):
    """A write or fsync failed; the log refuses further work until it is reopened (recovered).

    After a failed fsync the kernel may have dropped dirty pages, so retrying the fsync
    proves nothing (PostgreSQL's "fsyncgate"); reopening re-reads what is really on disk.
    """

