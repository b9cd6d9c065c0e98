"""ListOffsets (API key 2): look up partition offsets by timestamp (earliest, latest, ...)."""

from ..schema import F, Message

REQUEST = Message("ListOffsetsRequest", 2, "request", "1-11", "6+", [
    F("replica_id", "int32"),
    F("isolation_level", "int8", "2+"),
    F("topics", "[]ListOffsetsTopic", fields=[
        F("name", "string"),
        F("partitions", "[]ListOffsetsPartition", fields=[
            F("partition_index", "int32"),
            F("current_leader_epoch", "int32", "4+", default=-1, ignorable=True),
            F("timestamp", "int64"),
        ]),
    ]),
    # v10 (KIP-1075): how long a lookup in remote (tiered) storage may take; none here
    F("timeout_ms", "int32", "10+", ignorable=True),
])

RESPONSE = Message("ListOffsetsResponse", 2, "response", "1-11", "6+", [
    F("throttle_time_ms", "int32", "2+", ignorable=True),
    F("topics", "[]ListOffsetsTopicResponse", fields=[
        F("name", "string"),
        F("partitions", "[]ListOffsetsPartitionResponse", fields=[
            F("partition_index", "int32"),
            F("error_code", "int16"),
            F("timestamp", "int64", "1+", default=-1),
            F("offset", "int64", "1+", default=-1),
            F("leader_epoch", "int32", "4+", default=-1),
        ]),
    ]),
])
