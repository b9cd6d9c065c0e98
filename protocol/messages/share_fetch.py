"""ShareFetch (API key 78): a share-group member acquires records of its partitions, under a
lock, within a share session, and may acknowledge earlier ones in the same request.

Version 0 (Kafka 4.0's early access) left with 4.1; version 2 adds the acquire mode and lock
renewal (KIP-1222)."""

from ..schema import F, Message

REQUEST = Message("ShareFetchRequest", 78, "request", "1-2", "0+", [
    F("group_id", "string", nullable="0+", default=None),
    F("member_id", "string", nullable="0+"),
    F("share_session_epoch", "int32"),
    F("max_wait_ms", "int32"),
    F("min_bytes", "int32"),
    F("max_bytes", "int32", default=2147483647),
    F("max_records", "int32", "1+"),
    F("batch_size", "int32", "1+"),
    F("share_acquire_mode", "int8", "2+", default=0, ignorable=True),
    F("is_renew_ack", "bool", "2+", default=False),
    F("topics", "[]FetchTopic", fields=[
        F("topic_id", "uuid"),
        F("partitions", "[]FetchPartition", fields=[
            F("partition_index", "int32"),
            F("acknowledgement_batches", "[]AcknowledgementBatch", fields=[
                F("first_offset", "int64"),
                F("last_offset", "int64"),
                F("acknowledge_types", "[]int8"),
            ]),
        ]),
    ]),
    F("forgotten_topics_data", "[]ForgottenTopic", fields=[
        F("topic_id", "uuid"),
        F("partitions", "[]int32"),
    ]),
])

RESPONSE = Message("ShareFetchResponse", 78, "response", "1-2", "0+", [
    F("throttle_time_ms", "int32"),
    F("error_code", "int16"),
    F("error_message", "string", nullable="0+", default=None),
    F("acquisition_lock_timeout_ms", "int32", "1+"),
    F("responses", "[]ShareFetchableTopicResponse", fields=[
        F("topic_id", "uuid"),
        F("partitions", "[]PartitionData", fields=[
            F("partition_index", "int32"),
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+", default=None),
            F("acknowledge_error_code", "int16"),
            F("acknowledge_error_message", "string", nullable="0+", default=None),
            F("current_leader", "LeaderIdAndEpoch", fields=[
                F("leader_id", "int32"),
                F("leader_epoch", "int32"),
            ]),
            F("records", "records"),
            F("acquired_records", "[]AcquiredRecords", fields=[
                F("first_offset", "int64"),
                F("last_offset", "int64"),
                F("delivery_count", "int16"),
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
