"""ConsumerGroupDescribe (API key 69): report the state, epochs and members of KIP-848 groups."""

from ..schema import F, Message

# Newer Kafka (KIP-1327) adds a v2 with a per-group GroupCreationTimeMs; we serve 0-1 only.

REQUEST = Message("ConsumerGroupDescribeRequest", 69, "request", "0-1", "0+", [
    F("group_ids", "[]string"),
    F("include_authorized_operations", "bool"),
])

RESPONSE = Message("ConsumerGroupDescribeResponse", 69, "response", "0-1", "0+", [
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
            F("instance_id", "string", nullable="0+", default=None),
            F("rack_id", "string", nullable="0+", default=None),
            F("member_epoch", "int32"),
            F("client_id", "string"),
            F("client_host", "string"),
            F("subscribed_topic_names", "[]string"),
            F("subscribed_topic_regex", "string", nullable="0+", default=None),
            F("assignment", "Assignment"),
            F("target_assignment", "Assignment"),
            F("member_type", "int8", "1+", default=-1, ignorable=True),
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
