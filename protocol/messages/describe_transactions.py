"""DescribeTransactions (API key 65): the state of transactional ids (kafka-transactions.sh describe)."""

from ..schema import F, Message

REQUEST = Message("DescribeTransactionsRequest", 65, "request", "0", "0+", [
    F("transactional_ids", "[]string"),
])

RESPONSE = Message("DescribeTransactionsResponse", 65, "response", "0", "0+", [
    F("throttle_time_ms", "int32"),
    F("transaction_states", "[]TransactionState", fields=[
        F("error_code", "int16"),
        F("transactional_id", "string"),
        F("transaction_state", "string"),
        F("transaction_timeout_ms", "int32"),
        F("transaction_start_time_ms", "int64"),
        F("producer_id", "int64"),
        F("producer_epoch", "int16"),
        F("topics", "[]TopicData", fields=[
            F("topic", "string"),
            F("partitions", "[]int32"),
        ]),
    ]),
])
