"""Typed failures of the topic data plane, each carrying the Kafka error code a handler answers with.

Handlers catch :class:`TopicsError` once and put ``exc.error_code`` into the response
partition; the message is for the log line only.
"""

from __future__ import annotations

from protocol.errors import ErrorCode


class TopicsError(Exception):
    """Base of every error raised by topic_log."""

    error_code: ErrorCode = ErrorCode.UNKNOWN_SERVER_ERROR


class CorruptRecords(TopicsError):
    """A produced batch fails its CRC, magic or length checks (raised from the DecodeError)."""

    error_code = ErrorCode.CORRUPT_MESSAGE


class InvalidRecord(TopicsError):
    """Records Kafka refuses from clients: no batch at all, a control batch, or (in a compacted
    topic) records without a key, listed in ``record_errors`` as (index in batch, message)."""

    error_code = ErrorCode.INVALID_RECORD

    def __init__(self, message: str = "", *, record_errors: list[tuple[int, str]] = ()) -> None:
        super().__init__(message)
        self.record_errors = list(record_errors)


class InvalidTimestamp(InvalidRecord):
    """Records whose CreateTime timestamps lie too far from the broker's clock (Kafka's
    message.timestamp.before.max.ms / .after.max.ms), listed in ``record_errors``."""

    error_code = ErrorCode.INVALID_TIMESTAMP


class MessageTooLarge(TopicsError):
    """A batch larger than max.message.bytes."""

    error_code = ErrorCode.MESSAGE_TOO_LARGE


class InvalidTxnState(TopicsError):
    """A batch that does not fit the producer's transaction (a plain one while it is open)."""

    error_code = ErrorCode.INVALID_TXN_STATE


class OffsetOutOfRange(TopicsError):
    """A fetch offset below the log start or above the high watermark."""

    error_code = ErrorCode.OFFSET_OUT_OF_RANGE


class OutOfOrderSequence(TopicsError):
    """An idempotent batch whose sequence does not follow the producer's last one."""

    error_code = ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


class InvalidProducerEpoch(TopicsError):
    """A batch from a producer epoch older than one already written (a fenced producer)."""

    error_code = ErrorCode.INVALID_PRODUCER_EPOCH


class TransactionCoordinatorFenced(TopicsError):
    """A marker from a coordinator epoch older than the last marker's on the partition."""

    error_code = ErrorCode.TRANSACTION_COORDINATOR_FENCED


class StorageError(TopicsError):
    """The disk refused a write; the partition's tail was rolled back to its last good size."""

    error_code = ErrorCode.KAFKA_STORAGE_ERROR


class InvalidTopic(TopicsError):
    """A topic name Kafka would refuse (characters, length, "." / "..", collisions)."""

    error_code = ErrorCode.INVALID_TOPIC_EXCEPTION


class TopicAlreadyExists(TopicsError):
    error_code = ErrorCode.TOPIC_ALREADY_EXISTS


class InvalidPartitions(TopicsError):
    error_code = ErrorCode.INVALID_PARTITIONS


class NotLeader(TopicsError):
    """In a cluster: another node leads the partition (the client looks it up again)."""
    error_code = ErrorCode.NOT_LEADER_OR_FOLLOWER


class FencedLeaderEpoch(TopicsError):
    """The client's leader epoch is older than the partition's (its metadata is stale)."""
    error_code = ErrorCode.FENCED_LEADER_EPOCH


class UnknownLeaderEpoch(TopicsError):
    """The client's leader epoch is newer than the partition's (this broker is behind)."""
    error_code = ErrorCode.UNKNOWN_LEADER_EPOCH


class UnknownTopicOrPartition(TopicsError):
    """No such topic or partition, or its log was closed (deleted topic, shutdown)."""

    error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
