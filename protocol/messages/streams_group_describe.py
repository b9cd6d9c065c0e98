"""StreamsGroupDescribe (API key 89): streams groups, their topology and members
(Admin.describeStreamsGroups, kafka-streams-groups --describe)."""

from ..schema import F, Message

REQUEST = Message("StreamsGroupDescribeRequest", 89, "request", "0", "0+", [
    F("group_ids", "[]string"),
    F("include_authorized_operations", "bool"),
])

RESPONSE = Message("StreamsGroupDescribeResponse", 89, "response", "0", "0+", [
    F("throttle_time_ms", "int32"),
    F("groups", "[]DescribedGroup", fields=[
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=None),
        F("group_id", "string"),
        F("group_state", "string"),
        F("group_epoch", "int32"),
        F("assignment_epoch", "int32"),
        F("topology", "Topology", nullable="0+", default=None, fields=[
            F("epoch", "int32"),
            F("subtopologies", "[]Subtopology", nullable="0+", default=None, fields=[
                F("subtopology_id", "string"),
                F("source_topics", "[]string"),
                F("repartition_sink_topics", "[]string"),
                F("state_changelog_topics", "[]TopicInfo"),
                F("repartition_source_topics", "[]TopicInfo"),
            ]),
        ]),
        F("members", "[]Member", fields=[
            F("member_id", "string"),
            F("member_epoch", "int32"),
            F("instance_id", "string", nullable="0+", default=None),
            F("rack_id", "string", nullable="0+", default=None),
            F("client_id", "string"),
            F("client_host", "string"),
            F("topology_epoch", "int32"),
            F("process_id", "string"),
            F("user_endpoint", "Endpoint", nullable="0+", default=None),
            F("client_tags", "[]KeyValue"),
            F("task_offsets", "[]TaskOffset"),
            F("task_end_offsets", "[]TaskOffset"),
            F("assignment", "Assignment"),
            F("target_assignment", "Assignment"),
            F("is_classic", "bool"),
        ]),
        F("authorized_operations", "int32", default=-2147483648),
    ]),
], common={
    "Endpoint": [
        F("host", "string"),
        F("port", "uint16"),
    ],
    "TaskOffset": [
        F("subtopology_id", "string"),
        F("partition", "int32"),
        F("offset", "int64"),
    ],
    "Assignment": [
        F("active_tasks", "[]TaskIds"),
        F("standby_tasks", "[]TaskIds"),
        F("warmup_tasks", "[]TaskIds"),
    ],
    "TaskIds": [
        F("subtopology_id", "string"),
        F("partitions", "[]int32"),
    ],
    "KeyValue": [
        F("key", "string"),
        F("value", "string"),
    ],
    "TopicInfo": [
        F("name", "string"),
        F("partitions", "int32"),
        F("replication_factor", "int16"),
        F("topic_configs", "[]KeyValue"),
    ],
})
