"""EndTxn (API key 26): commit or abort a transaction.

Version 5 is transaction version 2's (KIP-890): every commit and abort bumps the producer's
epoch (or, the epoch exhausted, gives it a new producer id), and the answer says which.
"""

from ..schema import F, Message

REQUEST = Message("EndTxnRequest", 26, "request", "0-5", "3+", [
    F("transactional_id", "string"),
    F("producer_id", "int64"),
    F("producer_epoch", "int16"),
    F("committed", "bool"),
])

RESPONSE = Message("EndTxnResponse", 26, "response", "0-5", "3+", [
    F("throttle_time_ms", "int32"),
    F("error_code", "int16"),
    F("producer_id", "int64", "5+", default=-1, ignorable=True),
    F("producer_epoch", "int16", "5+", default=-1, ignorable=True),
])
