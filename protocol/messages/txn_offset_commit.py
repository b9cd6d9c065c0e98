"""TxnOffsetCommit (API key 28): offsets committed inside a transaction (KIP-98, KIP-447); v5
is transaction version 2's: it also adds the group's offsets partition to the transaction."""

from ..schema import F, Message

REQUEST = Message("TxnOffsetCommitRequest", 28, "request", "0-5", "3+", [
    F("transactional_id", "string"),
    F("group_id", "string"),
    F("producer_id", "int64"),
    F("producer_epoch", "int16"),
    F("generation_id", "int32", "3+", default=-1),
    F("member_id", "string", "3+", default=""),
    F("group_instance_id", "string", "3+", nullable="3+", default=None),
    F("topics", "[]TxnOffsetCommitRequestTopic", fields=[
        F("name", "string"),
        F("partitions", "[]TxnOffsetCommitRequestPartition", fields=[
            F("partition_index", "int32"),
            F("committed_offset", "int64"),
            F("committed_leader_epoch", "int32", "2+", default=-1, ignorable=True),
            F("committed_metadata", "string", nullable="0+"),
        ]),
    ]),
])

RESPONSE = Message("TxnOffsetCommitResponse", 28, "response", "0-5", "3+", [
    F("throttle_time_ms", "int32"),
    F("topics", "[]TxnOffsetCommitResponseTopic", fields=[
        F("name", "string"),
        F("partitions", "[]TxnOffsetCommitResponsePartition", fields=[
            F("partition_index", "int32"),
            F("error_code", "int16"),
        ]),
    ]),
])
