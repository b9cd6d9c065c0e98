"""OffsetCommit (API key 8): a consumer stores its committed offsets with the group coordinator."""

from ..schema import F, Message

# Kafka's valid range is 2-10, but v10 (topic ids in place of topic names) is not served here:
# we declare 2-9 and none of v10's fields (TopicId). The v1-only partition CommitTimestamp is
# dropped too, since v1 is below our minimum.

REQUEST = Message("OffsetCommitRequest", 8, "request", "2-9", "8+", [
    F("group_id", "string"),
    F("generation_id_or_member_epoch", "int32", "1+", default=-1, ignorable=True),
    F("member_id", "string", "1+", ignorable=True),
    F("group_instance_id", "string", "7+", nullable="7+", default=None),
    F("retention_time_ms", "int64", "2-4", default=-1, ignorable=True),
    F("topics", "[]OffsetCommitRequestTopic", fields=[
        F("name", "string", "0-9", ignorable=True),
        F("partitions", "[]OffsetCommitRequestPartition", fields=[
            F("partition_index", "int32"),
            F("committed_offset", "int64"),
            F("committed_leader_epoch", "int32", "6+", default=-1, ignorable=True),
            F("committed_metadata", "string", nullable="0+"),
        ]),
    ]),
])

RESPONSE = Message("OffsetCommitResponse", 8, "response", "2-9", "8+", [
    F("throttle_time_ms", "int32", "3+", ignorable=True),
    F("topics", "[]OffsetCommitResponseTopic", fields=[
        F("name", "string", "0-9", ignorable=True),
        F("partitions", "[]OffsetCommitResponsePartition", fields=[
            F("partition_index", "int32"),
            F("error_code", "int16"),
        ]),
    ]),
])
