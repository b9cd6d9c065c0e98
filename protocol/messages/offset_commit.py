"""OffsetCommit (API key 8): a consumer stores its committed offsets with the group coordinator."""

from ..schema import F, Message

# v10 names topics by id in place of the name. The v1-only partition CommitTimestamp is not
# declared, since v1 is below Kafka 4's minimum.

REQUEST = Message("OffsetCommitRequest", 8, "request", "2-10", "8+", [
    F("group_id", "string"),
    F("generation_id_or_member_epoch", "int32", "1+", default=-1, ignorable=True),
    F("member_id", "string", "1+", ignorable=True),
    F("group_instance_id", "string", "7+", nullable="7+", default=None),
    F("retention_time_ms", "int64", "2-4", default=-1, ignorable=True),
    F("topics", "[]OffsetCommitRequestTopic", fields=[
        F("name", "string", "0-9", ignorable=True),
        F("topic_id", "uuid", "10+", ignorable=True),
        F("partitions", "[]OffsetCommitRequestPartition", fields=[
            F("partition_index", "int32"),
            F("committed_offset", "int64"),
            F("committed_leader_epoch", "int32", "6+", default=-1, ignorable=True),
            F("committed_metadata", "string", nullable="0+"),
        ]),
    ]),
])

RESPONSE = Message("OffsetCommitResponse", 8, "response", "2-10", "8+", [
    F("throttle_time_ms", "int32", "3+", ignorable=True),
    F("topics", "[]OffsetCommitResponseTopic", fields=[
        F("name", "string", "0-9", ignorable=True),
        F("topic_id", "uuid", "10+", ignorable=True),
        F("partitions", "[]OffsetCommitResponsePartition", fields=[
            F("partition_index", "int32"),
            F("error_code", "int16"),
        ]),
    ]),
])
