"""Consumer protocol payloads: the subscription and assignment bytes inside Join/SyncGroup."""

from ..schema import F, Message

SUBSCRIPTION = Message("ConsumerProtocolSubscription", None, "data", "0-3", "none", [
    F("topics", "[]string"),
    F("user_data", "bytes", nullable="0+", default=None),
    F("owned_partitions", "[]TopicPartition", "1+", ignorable=True, fields=[
        F("topic", "string", "1+"),
        F("partitions", "[]int32", "1+"),
    ]),
    F("generation_id", "int32", "2+", default=-1, ignorable=True),
    F("rack_id", "string", "3+", nullable="3+", default=None, ignorable=True),
])

ASSIGNMENT = Message("ConsumerProtocolAssignment", None, "data", "0-3", "none", [
    F("assigned_partitions", "[]TopicPartition", fields=[
        F("topic", "string"),
        F("partitions", "[]int32"),
    ]),
    F("user_data", "bytes", nullable="0+", default=None),
])
