"""The ``__transaction_state`` records: Kafka's TransactionLogKey v0 and TransactionLogValue v0
(the version Kafka writes for clients of the classic transaction protocol), with the topic
partitions grouped by topic and none in the Empty state, as Kafka writes them."""

from __future__ import annotations

from offsets_log.records import Record
from protocol.messages.transaction_log_records import TRANSACTION_RECORDS as T
from protocol.payloads import decode_payload, encode_payload

from coordinator.transactions.metadata import Transit, TxnState

KEY_VERSION = 0
VALUE_VERSION = 0
_Value = T.value.cls
_Partitions = _Value.PartitionsSchema


def encode_record(transactional_id: str, transit: Transit | None) -> Record:
    """The record of one transition (``None``: the id's tombstone, when it expires)."""
    key = encode_payload(T.key, KEY_VERSION, T.key.cls(transactional_id=transactional_id))
    if transit is None:
        return Record(key, None)
    by_topic: dict[str, list[int]] = {}
    for topic, p in sorted(transit.partitions):
        by_topic.setdefault(topic, []).append(p)
    partitions = None if transit.state == TxnState.EMPTY else tuple(
        _Partitions(topic=t, partition_ids=tuple(ps)) for t, ps in by_topic.items())
    value = _Value(producer_id=transit.producer_id, producer_epoch=transit.producer_epoch,
                   transaction_timeout_ms=transit.timeout_ms, transaction_status=transit.state.id,
                   transaction_partitions=partitions,
                   transaction_last_update_timestamp_ms=transit.last_update_ms,
                   transaction_start_timestamp_ms=transit.start_ms)
    return Record(key, encode_payload(T.value, VALUE_VERSION, value))


def decode_record(record: Record) -> tuple[str, Transit | None]:
    """(transactional id, its transit or None for a tombstone). Kafka reloads the last epoch
    as unknown (-1), and so do we."""
    _, key = decode_payload(T.key, record.key)
    if record.value is None:
        return key.transactional_id, None
    version, v = decode_payload(T.value, record.value)
    state = TxnState.from_id(v.transaction_status)
    partitions = frozenset() if state == TxnState.EMPTY or v.transaction_partitions is None else \
        frozenset((s.topic, p) for s in v.transaction_partitions for p in s.partition_ids)
    previous = v.previous_producer_id if version >= 1 else -1
    return key.transactional_id, Transit(
        v.producer_id, previous, v.producer_epoch, -1, v.transaction_timeout_ms, state, partitions,
        v.transaction_start_timestamp_ms, v.transaction_last_update_timestamp_ms)
