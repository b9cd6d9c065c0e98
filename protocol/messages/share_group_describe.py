"""ShareGroupDescribe (API key 77): share groups, their members and assignments
(Admin.describeShareGroups, kafka-share-groups --describe)."""

from ..schema import F, Message

REQUEST = Message("ShareGroupDescribeRequest", 77, "request", "1", "0+", [
    F("group_ids", "[]string"),
    F("include_authorized_operations", "bool"),
])

RESPONSE = Message("ShareGroupDescribeResponse", 77, "response", "1", "0+", [
    F("throttle_time_ms", "int32"),
    F("groups", "[]DescribedGroup", fields=[
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=None),
        F("group_id", "string"),
        F("group_state", "string"),
        F("group_epoch", "int32"),
        F("assignment_epoch", "int32"),
        F("assignor_name", "string"),
        F("members", "[]Member", fields=[
            F("member_id", "string"),
            F("rack_id", "string", nullable="0+", default=None),
            F("member_epoch", "int32"),
            F("client_id", "string"),
            F("client_host", "string"),
            F("subscribed_topic_names", "[]string"),
            F("assignment", "Assignment"),
        ]),
        F("authorized_operations", "int32", default=-2147483648),
    ]),
], common={
    "TopicPartitions": [
        F("topic_id", "uuid"),
        F("topic_name", "string"),
        F("partitions", "[]int32"),
    ],
    "Assignment": [
        F("topic_partitions", "[]TopicPartitions"),
    ],
})
