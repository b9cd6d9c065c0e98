"""InitProducerId (API key 22): get a producer id and epoch for idempotent or transactional use."""

from ..schema import F, Message

REQUEST = Message("InitProducerIdRequest", 22, "request", "0-5", "2+", [
    F("transactional_id", "string", nullable="0+"),
    F("transaction_timeout_ms", "int32"),
    F("producer_id", "int64", "3+", default=-1),
    F("producer_epoch", "int16", "3+", default=-1),
])

RESPONSE = Message("InitProducerIdResponse", 22, "response", "0-5", "2+", [
    F("throttle_time_ms", "int32", ignorable=True),
    F("error_code", "int16"),
    F("producer_id", "int64", default=-1),
    F("producer_epoch", "int16"),
])
