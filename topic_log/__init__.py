"""The topics' data plane: partitions of Kafka v2 record batches on disk, idempotent producers.

Everything here is synchronous and takes time as ``now_ms`` arguments; request handlers call
it from the task that owns the store (or a worker thread) and catch :class:`TopicsError`,
whose ``error_code`` goes into the response. Handlers map requests to it like this:

``TopicStore(data_dir, num_partitions=, auto_create=, **PartitionLog options)``
    Opens (and recovers) every ``<data-dir>/<topic>-<p>/`` except the coordinators' logs
    (``__consumer_offsets-*``, ``__transaction_state-*``);
    recovery is skipped after a clean shutdown (``close()`` leaves Kafka's
    ``.kafka_cleanshutdown``). ``disk`` carries every write (``fail(errno)``/``heal()``
    inject storage failures).

    * Metadata: ``topics()``; for a named topic ``get_or_create(name) -> (Topic, created)``
      (InvalidTopic, or UnknownTopicOrPartition when auto-creation is off). A ``Topic`` has
      ``name``, ``topic_id`` (uuid.UUID, stable across restarts) and ``partitions`` (logs).
    * CreateTopics: ``create_topic(name, partitions or None/-1, validate_only=)``
      (InvalidTopic 17, TopicAlreadyExists 36, InvalidPartitions 37, StorageError 56); safe
      in a worker thread, which is where large topics should be created.
    * DeleteTopics: ``delete_topic(name)`` (UnknownTopicOrPartition 3); its logs are closed.
    * CreatePartitions: ``add_partitions(name, count, validate_only=)`` (UnknownTopicOrPartition
      3, InvalidPartitions 37 with Kafka's messages, StorageError 56); safe in a worker thread.
    * Produce/Fetch/ListOffsets: ``partition(name, p) -> PartitionLog``; topics by id (Produce
      v13, Fetch v13+) through ``metadata_image().by_id``.
    * InitProducerId (no transactional id): ``producer_ids.allocate()``, epoch 0.
    * Housekeeping: ``apply_retention(now_ms)`` periodically (Kafka's
      log.retention.check.interval.ms, 5 min), ``flush()``, ``close()`` on shutdown; neither
      raises for a failing partition (it is logged).

``PartitionLog(directory, **options)``
    Options mirror Kafka's topic configs: ``segment_bytes``, ``segment_ms``,
    ``retention_bytes``, ``retention_ms``, ``max_message_bytes``, ``log_append_time``
    (message.timestamp.type=LogAppendTime), ``cleanup_policy`` (a set of "compact" and
    "delete"), ``delete_retention_ms``, ``min_compaction_lag_ms``, ``max_compaction_lag_ms``,
    ``min_cleanable_dirty_ratio``. A compacted log is cleaned by
    :class:`topic_log.compaction.LogCleaner` (the data plane's cleaner loop); a
    compact-only log is never cut by retention, and refuses records without a key.

    * Produce: ``append(records, now_ms) -> AppendInfo(base_offset, last_offset,
      log_append_time)``. A retried idempotent batch returns its original offsets without
      writing (answer NONE). Raises CorruptRecords 2, InvalidRecord 87, MessageTooLarge 10,
      InvalidTxnState 48, OutOfOrderSequence 45, InvalidProducerEpoch 47,
      StorageError 56. Kafka's produce v3+ allows one batch per partition: check that in
      the handler (INVALID_RECORD); ``append`` itself accepts several.
    * Fetch: ``read(offset, max_bytes, min_one=True) -> bytes`` of whole stored batches
      (b"" at the high watermark; OffsetOutOfRange 1 outside the log). Long polling is the
      handler's: wait on a trio event set after each ``append`` and compare
      ``high_watermark``.
    * WriteTxnMarkers: ``write_marker(producer_id, epoch, commit, coordinator_epoch, now_ms,
      transaction_version=0) -> offset``. Raises InvalidProducerEpoch 47,
      TransactionCoordinatorFenced 52, StorageError 56.
    * ListOffsets: ``log_start_offset`` (earliest, -2), ``high_watermark`` (latest, -1),
      ``offset_for_timestamp(ts) -> TimestampOffset(offset, timestamp)``, (-1, -1) if none.
    * DeleteRecords: ``checkpoint_log_start(offset)`` (durable; a worker thread may run it),
      then ``advance_log_start(offset) -> log start offset`` (OffsetOutOfRange 1 above the
      high watermark); sealed segments wholly below it are deleted.
    * ``apply_retention(now_ms)``, ``flush()``, ``close()``. A partition whose write failed
      raises StorageError on append until a write succeeds again (it reopens itself);
      ``log_start_offset``/``high_watermark`` are -1 while its files cannot be opened.
"""

from .errors import (CorruptRecords, FencedLeaderEpoch, InvalidPartitions, InvalidProducerEpoch, InvalidRecord,
                     InvalidTopic, MessageTooLarge, NotLeader, OffsetOutOfRange, OutOfOrderSequence,
                     StorageError, TopicAlreadyExists, TopicsError, TransactionCoordinatorFenced,
                     InvalidTxnState, UnknownLeaderEpoch, UnknownTopicOrPartition)
from .partition_log import AppendInfo, PartitionLog, TimestampOffset
from .producer_state import ProducerIds, ProducerStateTable
from .store import Topic, TopicStore, validate_topic_name

__all__ = [
    "AppendInfo", "CorruptRecords", "FencedLeaderEpoch", "InvalidPartitions", "InvalidProducerEpoch", "InvalidRecord",
    "InvalidTopic", "MessageTooLarge", "NotLeader", "OffsetOutOfRange", "OutOfOrderSequence", "PartitionLog",
    "ProducerIds", "ProducerStateTable", "StorageError", "TimestampOffset", "Topic",
    "TopicAlreadyExists", "TopicStore", "TopicsError", "TransactionCoordinatorFenced", "InvalidTxnState",
    "UnknownLeaderEpoch", "UnknownTopicOrPartition", "validate_topic_name",
]
