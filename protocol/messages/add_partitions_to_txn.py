"""AddPartitionsToTxn (API key 24): a transactional producer adds partitions to its transaction.

Versions 4+ batch several transactions and come only from brokers verifying produce requests
for each other; one broker never sends them, so v0-3 (the clients' versions) are declared.
"""

from ..schema import F, Message

REQUEST = Message("AddPartitionsToTxnRequest", 24, "request", "0-3", "3+", [
    F("v3_and_below_transactional_id", "string"),
    F("v3_and_below_producer_id", "int64"),
    F("v3_and_below_producer_epoch", "int16"),
    F("v3_and_below_topics", "[]AddPartitionsToTxnTopic", fields=[
        F("name", "string"),
        F("partitions", "[]int32"),
    ]),
])

RESPONSE = Message("AddPartitionsToTxnResponse", 24, "response", "0-3", "3+", [
    F("throttle_time_ms", "int32"),
    F("results_by_topic_v3_and_below", "[]AddPartitionsToTxnTopicResult", fields=[
        F("name", "string"),
        F("results_by_partition", "[]AddPartitionsToTxnPartitionResult", fields=[
            F("partition_index", "int32"),
            F("partition_error_code", "int16"),
        ]),
    ]),
])
