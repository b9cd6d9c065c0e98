"""ShareAcknowledge (API key 79): a share-group member accepts, releases or rejects (and from
version 2 renews the lock of) records it acquired."""

from ..schema import F, Message

REQUEST = Message("ShareAcknowledgeRequest", 79, "request", "1-2", "0+", [
    F("group_id", "string", nullable="0+", default=None),
    F("member_id", "string", nullable="0+"),
    F("share_session_epoch", "int32"),
    F("is_renew_ack", "bool", "2+", default=False),
    F("topics", "[]AcknowledgeTopic", fields=[
        F("topic_id", "uuid"),
        F("partitions", "[]AcknowledgePartition", fields=[
            F("partition_index", "int32"),
            F("acknowledgement_batches", "[]AcknowledgementBatch", fields=[
                F("first_offset", "int64"),
                F("last_offset", "int64"),
                F("acknowledge_types", "[]int8"),
            ]),
        ]),
    ]),
])

RESPONSE = Message("ShareAcknowledgeResponse", 79, "response", "1-2", "0+", [
    F("throttle_time_ms", "int32"),
    F("error_code", "int16"),
    F("error_message", "string", nullable="0+", default=None),
    F("acquisition_lock_timeout_ms", "int32", "2+", ignorable=True),
    F("responses", "[]ShareAcknowledgeTopicResponse", fields=[
        F("topic_id", "uuid"),
        F("partitions", "[]PartitionData", fields=[
            F("partition_index", "int32"),
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+", default=None),
            F("current_leader", "LeaderIdAndEpoch", fields=[
                F("leader_id", "int32"),
                F("leader_epoch", "int32"),
            ]),
        ]),
    ]),
    F("node_endpoints", "[]NodeEndpoint", fields=[
        F("node_id", "int32"),
        F("host", "string"),
        F("port", "int32"),
        F("rack", "string", nullable="0+", default=None),
    ]),
])
