"""Produce (API key 0): append record batches to topic partitions.

v13 names topics by id (KIP-516) in place of the name. ApiVersions advertises this API from v0
(see broker/dispatch/api_versions.py), but v0-2 are not declared: a request at one of them is
refused like any version we do not speak."""

from ..schema import F, Message

REQUEST = Message("ProduceRequest", 0, "request", "3-13", "9+", [
    F("transactional_id", "string", "3+", nullable="3+", default=None),
    F("acks", "int16"),
    F("timeout_ms", "int32"),
    F("topic_data", "[]TopicProduceData", fields=[
        F("name", "string", "0-12", ignorable=True),
        F("topic_id", "uuid", "13+", ignorable=True),
        F("partition_data", "[]PartitionProduceData", fields=[
            F("index", "int32"),
            F("records", "records", nullable="0+"),
        ]),
    ]),
])

RESPONSE = Message("ProduceResponse", 0, "response", "3-13", "9+", [
    F("responses", "[]TopicProduceResponse", fields=[
        F("name", "string", "0-12", ignorable=True),
        F("topic_id", "uuid", "13+", ignorable=True),
        F("partition_responses", "[]PartitionProduceResponse", fields=[
            F("index", "int32"),
            F("error_code", "int16"),
            F("base_offset", "int64"),
            F("log_append_time_ms", "int64", "2+", default=-1, ignorable=True),
            F("log_start_offset", "int64", "5+", default=-1, ignorable=True),
            F("record_errors", "[]BatchIndexAndErrorMessage", "8+", ignorable=True, fields=[
                F("batch_index", "int32", "8+"),
                F("batch_index_error_message", "string", "8+", nullable="8+", default=None),
            ]),
            F("error_message", "string", "8+", nullable="8+", default=None, ignorable=True),
            F("current_leader", "LeaderIdAndEpoch", "10+", tag=0, tagged="10+", fields=[
                F("leader_id", "int32", "10+", default=-1),
                F("leader_epoch", "int32", "10+", default=-1),
            ]),
        ]),
    ]),
    F("throttle_time_ms", "int32", "1+", default=0, ignorable=True),
    F("node_endpoints", "[]NodeEndpoint", "10+", tag=0, tagged="10+", fields=[
        F("node_id", "int32", "10+"),
        F("host", "string", "10+"),
        F("port", "int32", "10+"),
        F("rack", "string", "10+", nullable="10+", default=None),
    ]),
])
