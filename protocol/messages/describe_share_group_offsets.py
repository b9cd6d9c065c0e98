"""DescribeShareGroupOffsets (API key 90): each share partition's start offset (and from version
1 its lag), as kafka-share-groups --describe --offsets shows them."""

from ..schema import F, Message

REQUEST = Message("DescribeShareGroupOffsetsRequest", 90, "request", "0-1", "0+", [
    F("groups", "[]DescribeShareGroupOffsetsRequestGroup", fields=[
        F("group_id", "string"),
        F("topics", "[]DescribeShareGroupOffsetsRequestTopic", nullable="0+", fields=[
            F("topic_name", "string"),
            F("partitions", "[]int32"),
        ]),
    ]),
])

RESPONSE = Message("DescribeShareGroupOffsetsResponse", 90, "response", "0-1", "0+", [
    F("throttle_time_ms", "int32"),
    F("groups", "[]DescribeShareGroupOffsetsResponseGroup", fields=[
        F("group_id", "string"),
        F("topics", "[]DescribeShareGroupOffsetsResponseTopic", fields=[
            F("topic_name", "string"),
            F("topic_id", "uuid"),
            F("partitions", "[]DescribeShareGroupOffsetsResponsePartition", fields=[
                F("partition_index", "int32"),
                F("start_offset", "int64"),
                F("leader_epoch", "int32"),
                F("lag", "int64", "1+", default=-1, ignorable=True),
                F("error_code", "int16"),
                F("error_message", "string", nullable="0+", default=None),
            ]),
        ]),
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=None),
    ]),
])
