"""CreateTopics (API key 19): create topics with partition counts, assignments and configs."""

from ..schema import F, Message

REQUEST = Message("CreateTopicsRequest", 19, "request", "2-7", "5+", [
    F("topics", "[]CreatableTopic", fields=[
        F("name", "string"),
        F("num_partitions", "int32"),
        F("replication_factor", "int16"),
        F("assignments", "[]CreatableReplicaAssignment", fields=[
            F("partition_index", "int32"),
            F("broker_ids", "[]int32"),
        ]),
        F("configs", "[]CreatableTopicConfig", fields=[
            F("name", "string"),
            F("value", "string", nullable="0+"),
        ]),
    ]),
    F("timeout_ms", "int32", default=60000),
    F("validate_only", "bool", "1+", default=False),
])

RESPONSE = Message("CreateTopicsResponse", 19, "response", "2-7", "5+", [
    F("throttle_time_ms", "int32", "2+", ignorable=True),
    F("topics", "[]CreatableTopicResult", fields=[
        F("name", "string"),
        F("topic_id", "uuid", "7+", ignorable=True),
        F("error_code", "int16"),
        F("error_message", "string", "1+", nullable="0+", ignorable=True),
        F("topic_config_error_code", "int16", "5+", tag=0, tagged="5+", ignorable=True),
        F("num_partitions", "int32", "5+", default=-1, ignorable=True),
        F("replication_factor", "int16", "5+", default=-1, ignorable=True),
        F("configs", "[]CreatableTopicConfigs", "5+", nullable="5+", ignorable=True, fields=[
            F("name", "string", "5+"),
            F("value", "string", "5+", nullable="5+"),
            F("read_only", "bool", "5+"),
            F("config_source", "int8", "5+", default=-1, ignorable=True),
            F("is_sensitive", "bool", "5+"),
        ]),
    ]),
])
