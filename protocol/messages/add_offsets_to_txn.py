"""AddOffsetsToTxn (API key 25): a transaction will carry a group's offsets (TxnOffsetCommit)."""

from ..schema import F, Message

REQUEST = Message("AddOffsetsToTxnRequest", 25, "request", "0-4", "3+", [
    F("transactional_id", "string"),
    F("producer_id", "int64"),
    F("producer_epoch", "int16"),
    F("group_id", "string"),
])

RESPONSE = Message("AddOffsetsToTxnResponse", 25, "response", "0-4", "3+", [
    F("throttle_time_ms", "int32"),
    F("error_code", "int16"),
])
