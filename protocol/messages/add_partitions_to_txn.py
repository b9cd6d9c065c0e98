"""AddPartitionsToTxn (API key 24): partitions join a transaction.

Versions 0-3 are a producer's (transaction version 1). Versions 4+ are sent by brokers: a batch
of transactions, each either verified (``verify_only``: is the partition in it already?) or
added, as a partition leader adds the partitions of a transaction version 2 produce; v5 may
answer TRANSACTION_ABORTABLE.
"""

from ..schema import F, Message

_TOPIC = [
    F("name", "string"),
    F("partitions", "[]int32"),
]
_TOPIC_RESULT = [
    F("name", "string"),
    F("results_by_partition", "[]AddPartitionsToTxnPartitionResult"),
]
_PARTITION_RESULT = [
    F("partition_index", "int32"),
    F("partition_error_code", "int16"),
]

REQUEST = Message("AddPartitionsToTxnRequest", 24, "request", "0-5", "3+", [
    F("transactions", "[]AddPartitionsToTxnTransaction", "4+", fields=[
        F("transactional_id", "string", "4+"),
        F("producer_id", "int64", "4+"),
        F("producer_epoch", "int16", "4+"),
        F("verify_only", "bool", "4+", default=False),
        F("topics", "[]AddPartitionsToTxnTopic", "4+"),
    ]),
    F("v3_and_below_transactional_id", "string", "0-3"),
    F("v3_and_below_producer_id", "int64", "0-3"),
    F("v3_and_below_producer_epoch", "int16", "0-3"),
    F("v3_and_below_topics", "[]AddPartitionsToTxnTopic", "0-3"),
], common={"AddPartitionsToTxnTopic": _TOPIC})

RESPONSE = Message("AddPartitionsToTxnResponse", 24, "response", "0-5", "3+", [
    F("throttle_time_ms", "int32"),
    F("error_code", "int16", "4+", ignorable=True),
    F("results_by_transaction", "[]AddPartitionsToTxnResult", "4+", fields=[
        F("transactional_id", "string", "4+"),
        F("topic_results", "[]AddPartitionsToTxnTopicResult", "4+"),
    ]),
    F("results_by_topic_v3_and_below", "[]AddPartitionsToTxnTopicResult", "0-3"),
], common={"AddPartitionsToTxnTopicResult": _TOPIC_RESULT,
           "AddPartitionsToTxnPartitionResult": _PARTITION_RESULT})
