"""StreamsGroupHeartbeat (API key 88): a Kafka Streams member of a streams group (KIP-1071,
`group.protocol=streams`) sends its topology and its tasks' offsets, and gets its active,
standby and warm-up tasks."""

from ..schema import F, Message

REQUEST = Message("StreamsGroupHeartbeatRequest", 88, "request", "0", "0+", [
    F("group_id", "string"),
    F("member_id", "string"),
    F("member_epoch", "int32"),
    F("endpoint_information_epoch", "int32"),
    F("instance_id", "string", nullable="0+", default=None),
    F("rack_id", "string", nullable="0+", default=None),
    F("rebalance_timeout_ms", "int32", default=-1),
    F("topology", "Topology", nullable="0+", default=None, fields=[
        F("epoch", "int32"),
        F("subtopologies", "[]Subtopology", fields=[
            F("subtopology_id", "string"),
            F("source_topics", "[]string"),
            F("source_topic_regex", "[]string"),
            F("state_changelog_topics", "[]TopicInfo"),
            F("repartition_sink_topics", "[]string"),
            F("repartition_source_topics", "[]TopicInfo"),
            F("copartition_groups", "[]CopartitionGroup", fields=[
                F("source_topics", "[]int16"),
                F("source_topic_regex", "[]int16"),
                F("repartition_source_topics", "[]int16"),
            ]),
        ]),
    ]),
    F("active_tasks", "[]TaskIds", nullable="0+", default=None),
    F("standby_tasks", "[]TaskIds", nullable="0+", default=None),
    F("warmup_tasks", "[]TaskIds", nullable="0+", default=None),
    F("process_id", "string", nullable="0+", default=None),
    F("user_endpoint", "Endpoint", nullable="0+", default=None),
    F("client_tags", "[]KeyValue", nullable="0+", default=None),
    F("task_offsets", "[]TaskOffset", nullable="0+", default=None),
    F("task_end_offsets", "[]TaskOffset", nullable="0+", default=None),
    F("shutdown_application", "bool", default=False),
], common={
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
    "Endpoint": [
        F("host", "string"),
        F("port", "uint16"),
    ],
    "TaskOffset": [
        F("subtopology_id", "string"),
        F("partition", "int32"),
        F("offset", "int64"),
    ],
    "TaskIds": [
        F("subtopology_id", "string"),
        F("partitions", "[]int32"),
    ],
})

RESPONSE = Message("StreamsGroupHeartbeatResponse", 88, "response", "0", "0+", [
    F("throttle_time_ms", "int32"),
    F("error_code", "int16"),
    F("error_message", "string", nullable="0+", default=None),
    F("member_id", "string"),
    F("member_epoch", "int32"),
    F("heartbeat_interval_ms", "int32"),
    F("acceptable_recovery_lag", "int32"),
    F("task_offset_interval_ms", "int32"),
    F("status", "[]Status", nullable="0+"),
    F("active_tasks", "[]TaskIds", nullable="0+", default=None),
    F("standby_tasks", "[]TaskIds", nullable="0+", default=None),
    F("warmup_tasks", "[]TaskIds", nullable="0+", default=None),
    F("endpoint_information_epoch", "int32"),
    F("partitions_by_user_endpoint", "[]EndpointToPartitions", nullable="0+", default=None, fields=[
        F("user_endpoint", "Endpoint"),
        F("active_partitions", "[]TopicPartition"),
        F("standby_partitions", "[]TopicPartition"),
    ]),
], common={
    "Status": [
        F("status_code", "int8"),
        F("status_detail", "string"),
    ],
    "TopicPartition": [
        F("topic", "string"),
        F("partitions", "[]int32"),
    ],
    "TaskIds": [
        F("subtopology_id", "string"),
        F("partitions", "[]int32"),
    ],
    "Endpoint": [
        F("host", "string"),
        F("port", "uint16"),
    ],
})
