"""ShareGroupHeartbeat (API key 76): a share-group member (KIP-932) joins, heartbeats and gets
the partitions it may fetch from; several members may share one partition."""

from ..schema import F, Message

REQUEST = Message("ShareGroupHeartbeatRequest", 76, "request", "1", "0+", [
    F("group_id", "string"),
    F("member_id", "string"),
    F("member_epoch", "int32"),
    F("rack_id", "string", nullable="0+", default=None),
    F("subscribed_topic_names", "[]string", nullable="0+", default=None),
])

RESPONSE = Message("ShareGroupHeartbeatResponse", 76, "response", "1", "0+", [
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
