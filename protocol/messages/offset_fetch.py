"""OffsetFetch (API key 9): a consumer reads back the offsets committed for one or more groups."""

from ..schema import F, Message

# v10 names the topics of each group by id in place of the name.

REQUEST = Message("OffsetFetchRequest", 9, "request", "1-10", "6+", [
    F("group_id", "string", "0-7"),
    F("topics", "[]OffsetFetchRequestTopic", "0-7", nullable="2-7", fields=[
        F("name", "string", "0-7"),
        F("partition_indexes", "[]int32", "0-7"),
    ]),
    F("groups", "[]OffsetFetchRequestGroup", "8+", fields=[
        F("group_id", "string", "8+"),
        F("member_id", "string", "9+", nullable="9+", default=None, ignorable=True),
        F("member_epoch", "int32", "9+", default=-1, ignorable=True),
        F("topics", "[]OffsetFetchRequestTopics", "8+", nullable="8+", fields=[
            F("name", "string", "8-9", ignorable=True),
            F("topic_id", "uuid", "10+", ignorable=True),
            F("partition_indexes", "[]int32", "8+"),
        ]),
    ]),
    F("require_stable", "bool", "7+", default=False),
])

RESPONSE = Message("OffsetFetchResponse", 9, "response", "1-10", "6+", [
    F("throttle_time_ms", "int32", "3+", ignorable=True),
    F("topics", "[]OffsetFetchResponseTopic", "0-7", fields=[
        F("name", "string", "0-7"),
        F("partitions", "[]OffsetFetchResponsePartition", "0-7", fields=[
            F("partition_index", "int32", "0-7"),
            F("committed_offset", "int64", "0-7"),
            F("committed_leader_epoch", "int32", "5-7", default=-1, ignorable=True),
            F("metadata", "string", "0-7", nullable="0-7"),
            F("error_code", "int16", "0-7"),
        ]),
    ]),
    F("error_code", "int16", "2-7", default=0, ignorable=True),
    F("groups", "[]OffsetFetchResponseGroup", "8+", fields=[
        F("group_id", "string", "8+"),
        F("topics", "[]OffsetFetchResponseTopics", "8+", fields=[
            F("name", "string", "8-9", ignorable=True),
            F("topic_id", "uuid", "10+", ignorable=True),
            F("partitions", "[]OffsetFetchResponsePartitions", "8+", fields=[
                F("partition_index", "int32", "8+"),
                F("committed_offset", "int64", "8+"),
                F("committed_leader_epoch", "int32", "8+", default=-1, ignorable=True),
                F("metadata", "string", "8+", nullable="8+"),
                F("error_code", "int16", "8+"),
            ]),
        ]),
        F("error_code", "int16", "8+", default=0),
    ]),
])
