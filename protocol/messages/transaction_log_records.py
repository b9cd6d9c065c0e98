"""Kafka's ``__transaction_state`` record key and value, held in ``TRANSACTION_RECORDS``
(log records, not payloads: kept out of DATA like the ``__consumer_offsets`` records)."""

from types import SimpleNamespace

from ..schema import F, Message

TRANSACTION_RECORDS = SimpleNamespace(
    key=Message("TransactionLogKey", None, "data", "0", "none", [
        F("transactional_id", "string", "0"),
    ]),
    # Kafka writes v0 for transaction.version 0/1 clients, v1 (flexible) for TV2. The tagged
    # fields are not ignorable in Kafka's JSON: a v0 record cannot carry them, so encoding one
    # that holds a non-default value is an error rather than a silent loss.
    value=Message("TransactionLogValue", None, "data", "0-1", "1+", [
        F("producer_id", "int64"),
        F("previous_producer_id", "int64", "1+", default=-1, tag=0, tagged="1+"),
        F("next_producer_id", "int64", "1+", default=-1, tag=1, tagged="1+"),
        F("producer_epoch", "int16"),
        F("transaction_timeout_ms", "int32"),
        F("transaction_status", "int8"),
        F("transaction_partitions", "[]PartitionsSchema", nullable="0+", fields=[
            F("topic", "string"),
            F("partition_ids", "[]int32"),
        ]),
        F("transaction_last_update_timestamp_ms", "int64"),
        F("transaction_start_timestamp_ms", "int64"),
        F("client_transaction_version", "int16", "1+", default=0, tag=2, tagged="1+"),
    ]),
)
