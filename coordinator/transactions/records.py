"""The ``__transaction_state`` records: Kafka's TransactionLogKey v0 and TransactionLogValue, with
the topic partitions grouped by topic and none in the Empty state, as Kafka writes them. The
value's version is the finalized transaction.version's, as in Kafka: v1 (previous and next
producer ids, the client's transaction version, tagged) from level 1, v0 at level 0, which
cannot hold them (Kafka's writer fails on a transaction version 2 client's then; ours writes
them as their defaults)."""

from __future__ import annotations

from offsets_log.records import Record
from protocol.messages.transaction_log_records import TRANSACTION_RECORDS as T
from protocol.payloads import decode_payload, encode_payload

from coordinator.transactions.metadata import Transit, TxnState

KEY_VERSION = 0
_Value = T.value.cls
_Partitions = _Value.PartitionsSchema


def encode_record(transactional_id: str, transit: Transit | None, transaction_version: int = 2) -> Record:
    """The record of one transition (``None``: the id's tombstone, when it expires), in the value
    version of ``transaction_version`` (the finalized level)."""
    key = encode_payload(T.key, KEY_VERSION, T.key.cls(transactional_id=transactional_id))
    if transit is None:
        return Record(key, None)
    by_topic: dict[str, list[int]] = {}
    for topic, p in sorted(transit.partitions):
        by_topic.setdefault(topic, []).append(p)
    partitions = None if transit.state == TxnState.EMPTY else tuple(
        _Partitions(topic=t, partition_ids=tuple(ps)) for t, ps in by_topic.items())
    version = 1 if transaction_version >= 1 else 0
    tagged = dict(previous_producer_id=transit.previous_producer_id, next_producer_id=transit.next_producer_id,
                  client_transaction_version=transit.client_tv) if version >= 1 else {}
    value = _Value(producer_id=transit.producer_id, producer_epoch=transit.producer_epoch,
                   transaction_timeout_ms=transit.timeout_ms, transaction_status=transit.state.id,
                   transaction_partitions=partitions,
                   transaction_last_update_timestamp_ms=transit.last_update_ms,
                   transaction_start_timestamp_ms=transit.start_ms, **tagged)
    return Record(key, encode_payload(T.value, version, value))


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
    return key.transactional_id, Transit(
        v.producer_id, v.previous_producer_id, v.producer_epoch, -1, v.transaction_timeout_ms, state, partitions,
        v.transaction_start_timestamp_ms, v.transaction_last_update_timestamp_ms, v.next_producer_id,
        v.client_transaction_version)
