"""Kafka's ``__consumer_offsets`` record keys and values, held in ``RECORDS`` (not auto-registered in DATA)."""

from types import SimpleNamespace

from ..schema import F, Message
from ..wire import ZERO_UUID

# Kept inside a namespace on purpose: the package registers every module-level Message in
# DATA, and these are log records, not payloads carried by a group API.
RECORDS = SimpleNamespace(
    # Key version 0 and 1 share one layout; the version doubles as the record type.
    offset_commit_key=Message("OffsetCommitKey", None, "data", "0-1", "none", [
        F("group", "string"),
        F("topic", "string"),
        F("partition", "int32"),
    ]),
    offset_commit_value=Message("OffsetCommitValue", None, "data", "0-4", "4+", [
        F("offset", "int64"),
        F("leader_epoch", "int32", "3+", default=-1, ignorable=True),
        F("metadata", "string"),
        F("commit_timestamp", "int64"),
        F("expire_timestamp", "int64", "1", default=-1, ignorable=True),
        F("topic_id", "uuid", "4+", default=ZERO_UUID, tag=0, tagged="4+", ignorable=True),
    ]),
    group_metadata_key=Message("GroupMetadataKey", None, "data", "2", "none", [
        F("group", "string"),
    ]),
    group_metadata_value=Message("GroupMetadataValue", None, "data", "0-4", "4+", [
        F("protocol_type", "string"),
        F("generation", "int32"),
        F("protocol", "string", nullable="0+"),
        F("leader", "string", nullable="0+"),
        F("current_state_timestamp", "int64", "2+", default=-1, ignorable=True),
        F("members", "[]MemberMetadata"),
    ], common={"MemberMetadata": [
        F("member_id", "string"),
        F("group_instance_id", "string", "3+", nullable="3+", default=None, ignorable=True),
        F("client_id", "string"),
        F("client_host", "string"),
        F("rebalance_timeout", "int32", "1+", ignorable=True),
        F("session_timeout", "int32"),
        F("subscription", "bytes"),
        F("assignment", "bytes"),
    ]}),
)
