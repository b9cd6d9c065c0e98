"""EndTxn (API key 26): commit or abort a transaction.

Version 5 is the KIP-890 transaction protocol (an epoch bump per transaction); Kafka takes an
EndTxn v5 for a TV2 client, which we do not serve, so v0-4 are declared.
"""

from ..schema import F, Message

REQUEST = Message("EndTxnRequest", 26, "request", "0-4", "3+", [
    F("transactional_id", "string"),
    F("producer_id", "int64"),
    F("producer_epoch", "int16"),
    F("committed", "bool"),
])

RESPONSE = Message("EndTxnResponse", 26, "response", "0-4", "3+", [
    F("throttle_time_ms", "int32"),
    F("error_code", "int16"),
])
