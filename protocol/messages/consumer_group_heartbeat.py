"""ConsumerGroupHeartbeat (API key 68): a KIP-848 member joins, heartbeats, gets its assignment."""

from ..schema import F, Message

# Newer Kafka (KIP-1327) adds a v2 with a response GroupCreationTimeMs; we serve 0-1 only.

REQUEST = Message("ConsumerGroupHeartbeatRequest", 68, "request", "0-1", "0+", [
    F("group_id", "string"),
    F("member_id", "string"),
    F("member_epoch", "int32"),
    F("instance_id", "string", nullable="0+", default=None),
    F("rack_id", "string", nullable="0+", default=None),
    F("rebalance_timeout_ms", "int32", default=-1),
    F("subscribed_topic_names", "[]string", nullable="0+", default=None),
    F("subscribed_topic_regex", "string", "1+", nullable="1+", default=None),
    F("server_assignor", "string", nullable="0+", default=None),
    F("topic_partitions", "[]TopicPartitions", nullable="0+", default=None, fields=[
        F("topic_id", "uuid"),
        F("partitions", "[]int32"),
    ]),
])

RESPONSE = Message("ConsumerGroupHeartbeatResponse", 68, "response", "0-1", "0+", [
    F("throttle_time_ms", "int32"),
    F("error_code", "int16"),
    F("error_message", "string", nullable="0+", default=None),
    F("member_id", "string", nullable="0+", default=None),
    F("member_epoch", "int32"),
    F("heartbeat_interval_ms", "int32"),
    F("assignment", "Assignment", nullable="0+", default=None, fields=[
        F("topic_partitions", "[]TopicPartitions"),
    ]),
], common={
    "TopicPartitions": [
        F("topic_id", "uuid"),
        F("partitions", "[]int32"),
    ],
})
