"""OffsetDelete (API key 47): remove a group's committed offsets for given partitions."""

from ..schema import F, Message

REQUEST = Message("OffsetDeleteRequest", 47, "request", "0", "none", [
    F("group_id", "string"),
    F("topics", "[]OffsetDeleteRequestTopic", fields=[
        F("name", "string"),
        F("partitions", "[]OffsetDeleteRequestPartition", fields=[
            F("partition_index", "int32"),
        ]),
    ]),
])

RESPONSE = Message("OffsetDeleteResponse", 47, "response", "0", "none", [
    F("error_code", "int16"),
    F("throttle_time_ms", "int32", ignorable=True),
    F("topics", "[]OffsetDeleteResponseTopic", fields=[
        F("name", "string"),
        F("partitions", "[]OffsetDeleteResponsePartition", fields=[
            F("partition_index", "int32"),
            F("error_code", "int16"),
        ]),
    ]),
])
