"""OffsetForLeaderEpoch (API key 23): where a leader epoch ends, so a consumer whose partition
changed leader can check that its position was not truncated (KIP-320)."""

from ..schema import F, Message

REQUEST = Message("OffsetForLeaderEpochRequest", 23, "request", "2-4", "4+", [
    F("replica_id", "int32", "3+", default=-2, ignorable=True),
    F("topics", "[]OffsetForLeaderTopic", fields=[
        F("topic", "string"),
        F("partitions", "[]OffsetForLeaderPartition", fields=[
            F("partition", "int32"),
            F("current_leader_epoch", "int32", "2+", default=-1, ignorable=True),
            F("leader_epoch", "int32"),
        ]),
    ]),
])

RESPONSE = Message("OffsetForLeaderEpochResponse", 23, "response", "2-4", "4+", [
    F("throttle_time_ms", "int32", "2+", ignorable=True),
    F("topics", "[]OffsetForLeaderTopicResult", fields=[
        F("topic", "string"),
        F("partitions", "[]EpochEndOffset", fields=[
            F("error_code", "int16"),
            F("partition", "int32"),
            F("leader_epoch", "int32", "1+", default=-1, ignorable=True),
            F("end_offset", "int64", default=-1),
        ]),
    ]),
])
