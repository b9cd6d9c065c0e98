"""CreatePartitions (API key 37): raise the partition count of existing topics."""

from ..schema import F, Message

REQUEST = Message("CreatePartitionsRequest", 37, "request", "0-3", "2+", [
    F("topics", "[]CreatePartitionsTopic", fields=[
        F("name", "string"),
        F("count", "int32"),
        F("assignments", "[]CreatePartitionsAssignment", nullable="0+", fields=[
            F("broker_ids", "[]int32"),
        ]),
    ]),
    F("timeout_ms", "int32"),
    F("validate_only", "bool"),
])

RESPONSE = Message("CreatePartitionsResponse", 37, "response", "0-3", "2+", [
    F("throttle_time_ms", "int32"),
    F("results", "[]CreatePartitionsTopicResult", fields=[
        F("name", "string"),
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=None),
    ]),
])

