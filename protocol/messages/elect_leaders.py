"""ElectLeaders (API key 43): ask the controller to elect partition leaders."""

from ..schema import F, Message

REQUEST = Message("ElectLeadersRequest", 43, "request", "0-2", "2+", [
    F("election_type", "int8", "1+"),
    F("topic_partitions", "[]TopicPartitions", nullable="0+", fields=[
        F("topic", "string"),
        F("partitions", "[]int32"),
    ]),
    F("timeout_ms", "int32", default=60000),
])

RESPONSE = Message("ElectLeadersResponse", 43, "response", "0-2", "2+", [
    F("throttle_time_ms", "int32"),
    F("error_code", "int16", "1+"),
    F("replica_election_results", "[]ReplicaElectionResult", fields=[
        F("topic", "string"),
        F("partition_result", "[]PartitionResult", fields=[
            F("partition_id", "int32"),
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+"),
        ]),
    ]),
])

