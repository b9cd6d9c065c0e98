"""ListTransactions (API key 66): the transactional ids a coordinator knows (kafka-transactions.sh list)."""

from ..schema import F, Message

REQUEST = Message("ListTransactionsRequest", 66, "request", "0-2", "0+", [
    F("state_filters", "[]string"),
    F("producer_id_filters", "[]int64"),
    F("duration_filter", "int64", "1+", default=-1),
    # v2 (KIP-1152): a Java regular expression the whole transactional id must match
    F("transactional_id_pattern", "string", "2+", nullable="2+", default=None),
])

RESPONSE = Message("ListTransactionsResponse", 66, "response", "0-2", "0+", [
    F("throttle_time_ms", "int32"),
    F("error_code", "int16"),
    F("unknown_state_filters", "[]string"),
    F("transaction_states", "[]TransactionState", fields=[
        F("transactional_id", "string"),
        F("producer_id", "int64"),
        F("transaction_state", "string"),
    ]),
])
