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

# KIP-848 consumer-group records: the key version is the record type (3-8, and 16 for a
# resolved regular expression). Every value is flexible from version 0.
_TOPIC_PARTITIONS = [F("topic_id", "uuid"), F("partitions", "[]int32")]


def _group_key(name: str, version: str, *member_fields):
    return Message(name, None, "data", version, "none", [F("group_id", "string"), *member_fields])


CONSUMER_GROUP_RECORDS = SimpleNamespace(
    metadata_key=_group_key("ConsumerGroupMetadataKey", "3"),
    metadata_value=Message("ConsumerGroupMetadataValue", None, "data", "0", "0+", [
        F("epoch", "int32"),
    ]),
    partition_metadata_key=_group_key("ConsumerGroupPartitionMetadataKey", "4"),
    partition_metadata_value=Message("ConsumerGroupPartitionMetadataValue", None, "data", "0", "0+", [
        F("topics", "[]TopicMetadata", fields=[
            F("topic_id", "uuid"),
            F("topic_name", "string"),
            F("num_partitions", "int32"),
            F("partition_metadata", "[]PartitionMetadata", fields=[
                F("partition", "int32"),
                F("racks", "[]string"),
            ]),
        ]),
    ]),
    member_metadata_key=_group_key("ConsumerGroupMemberMetadataKey", "5", F("member_id", "string")),
    member_metadata_value=Message("ConsumerGroupMemberMetadataValue", None, "data", "0", "0+", [
        F("instance_id", "string", nullable="0+"),
        F("rack_id", "string", nullable="0+"),
        F("client_id", "string"),
        F("client_host", "string"),
        F("subscribed_topic_names", "[]string"),
        F("subscribed_topic_regex", "string", nullable="0+"),
        F("rebalance_timeout_ms", "int32", default=-1),
        F("server_assignor", "string", nullable="0+"),
        F("classic_member_metadata", "ClassicMemberMetadata", nullable="0+", default=None,
          tag=0, tagged="0+", fields=[
              F("session_timeout_ms", "int32"),
              F("supported_protocols", "[]ClassicProtocol", fields=[
                  F("name", "string"),
                  F("metadata", "bytes"),
              ]),
          ]),
    ]),
    target_assignment_metadata_key=_group_key("ConsumerGroupTargetAssignmentMetadataKey", "6"),
    target_assignment_metadata_value=Message(
        "ConsumerGroupTargetAssignmentMetadataValue", None, "data", "0", "0+", [
            F("assignment_epoch", "int32"),
            # Kafka 4.3 (KIP-1263): when the assignment was computed; absent (0) in older logs
            F("assignment_timestamp", "int64", default=0, tag=0, tagged="0+", ignorable=True),
        ]),
    target_assignment_member_key=_group_key("ConsumerGroupTargetAssignmentMemberKey", "7",
                                            F("member_id", "string")),
    target_assignment_member_value=Message(
        "ConsumerGroupTargetAssignmentMemberValue", None, "data", "0", "0+", [
            F("topic_partitions", "[]TopicPartition", fields=_TOPIC_PARTITIONS),
        ]),
    current_member_assignment_key=_group_key("ConsumerGroupCurrentMemberAssignmentKey", "8",
                                             F("member_id", "string")),
    current_member_assignment_value=Message(
        "ConsumerGroupCurrentMemberAssignmentValue", None, "data", "0", "0+", [
            F("member_epoch", "int32"),
            F("previous_member_epoch", "int32"),
            F("state", "int8"),
            F("assigned_partitions", "[]TopicPartitions"),
            F("partitions_pending_revocation", "[]TopicPartitions"),
        ], common={"TopicPartitions": [
            *_TOPIC_PARTITIONS,
            # Kafka 4.3 (KIP-1251): the epoch each partition was assigned at, one per partition;
            # absent (None) in older logs
            F("assignment_epochs", "[]int32", nullable="0+", default=None, tag=0, tagged="0+"),
        ]}),
    regular_expression_key=_group_key("ConsumerGroupRegularExpressionKey", "16",
                                      F("regular_expression", "string")),
    regular_expression_value=Message(
        "ConsumerGroupRegularExpressionValue", None, "data", "0", "0+", [
            F("topics", "[]string"),
            F("version", "int64"),
            F("timestamp", "int64"),
        ]),
)

# KIP-932 share-group records in the offsets log: the key version is the record type (10-15).
_TOPIC_PARTITIONS_INFO = [F("topic_id", "uuid"), F("topic_name", "string"), F("partitions", "[]int32")]

SHARE_GROUP_RECORDS = SimpleNamespace(
    member_metadata_key=_group_key("ShareGroupMemberMetadataKey", "10", F("member_id", "string")),
    member_metadata_value=Message("ShareGroupMemberMetadataValue", None, "data", "0", "0+", [
        F("rack_id", "string", nullable="0+"),
        F("client_id", "string"),
        F("client_host", "string"),
        F("subscribed_topic_names", "[]string"),
    ]),
    metadata_key=_group_key("ShareGroupMetadataKey", "11"),
    metadata_value=Message("ShareGroupMetadataValue", None, "data", "0", "0+", [
        F("epoch", "int32"),
        F("metadata_hash", "int64"),
    ]),
    target_assignment_metadata_key=_group_key("ShareGroupTargetAssignmentMetadataKey", "12"),
    target_assignment_metadata_value=Message(
        "ShareGroupTargetAssignmentMetadataValue", None, "data", "0", "0+", [
            F("assignment_epoch", "int32"),
            F("assignment_timestamp", "int64", default=0, tag=0, tagged="0+", ignorable=True),
        ]),
    target_assignment_member_key=_group_key("ShareGroupTargetAssignmentMemberKey", "13",
                                            F("member_id", "string")),
    target_assignment_member_value=Message(
        "ShareGroupTargetAssignmentMemberValue", None, "data", "0", "0+", [
            F("topic_partitions", "[]TopicPartition", fields=_TOPIC_PARTITIONS),
        ]),
    current_member_assignment_key=_group_key("ShareGroupCurrentMemberAssignmentKey", "14",
                                             F("member_id", "string")),
    current_member_assignment_value=Message(
        "ShareGroupCurrentMemberAssignmentValue", None, "data", "0", "0+", [
            F("member_epoch", "int32"),
            F("previous_member_epoch", "int32"),
            F("state", "int8"),
            F("assigned_partitions", "[]TopicPartitions", fields=_TOPIC_PARTITIONS),
        ]),
    state_partition_metadata_key=_group_key("ShareGroupStatePartitionMetadataKey", "15"),
    state_partition_metadata_value=Message(
        "ShareGroupStatePartitionMetadataValue", None, "data", "0", "0+", [
            F("initializing_topics", "[]TopicPartitionsInfo", fields=_TOPIC_PARTITIONS_INFO),
            F("initialized_topics", "[]TopicPartitionsInfo", fields=_TOPIC_PARTITIONS_INFO),
            F("deleting_topics", "[]TopicInfo", fields=[F("topic_id", "uuid"), F("topic_name", "string")]),
        ]),
)

# KIP-1071 streams-group records: the key version is the record type (17, 19-23; 18 was removed).
_KEY_VALUE = [F("key", "string"), F("value", "string")]
_TASK_IDS = [F("subtopology_id", "string"), F("partitions", "[]int32")]
_STREAMS_TOPIC_INFO = [F("name", "string"), F("partitions", "int32"), F("replication_factor", "int16"),
                       F("topic_configs", "[]TopicConfig", fields=_KEY_VALUE)]

STREAMS_GROUP_RECORDS = SimpleNamespace(
    metadata_key=_group_key("StreamsGroupMetadataKey", "17"),
    metadata_value=Message("StreamsGroupMetadataValue", None, "data", "0", "0+", [
        F("epoch", "int32"),
        F("metadata_hash", "int64"),
        F("validated_topology_epoch", "int32", default=-1, tag=0, tagged="0+"),
        F("last_assignment_configs", "[]LastAssignmentConfig", nullable="0+", default=None, tag=1,
          tagged="0+", fields=_KEY_VALUE),
    ]),
    member_metadata_key=_group_key("StreamsGroupMemberMetadataKey", "19", F("member_id", "string")),
    member_metadata_value=Message("StreamsGroupMemberMetadataValue", None, "data", "0", "0+", [
        F("instance_id", "string", nullable="0+"),
        F("rack_id", "string", nullable="0+"),
        F("client_id", "string"),
        F("client_host", "string"),
        F("rebalance_timeout_ms", "int32", default=-1),
        F("topology_epoch", "int32"),
        F("process_id", "string"),
        F("user_endpoint", "Endpoint", nullable="0+", default=None, fields=[
            F("host", "string"), F("port", "uint16")]),
        F("client_tags", "[]KeyValue", fields=_KEY_VALUE),
    ]),
    target_assignment_metadata_key=_group_key("StreamsGroupTargetAssignmentMetadataKey", "20"),
    target_assignment_metadata_value=Message(
        "StreamsGroupTargetAssignmentMetadataValue", None, "data", "0", "0+", [
            F("assignment_epoch", "int32"),
            F("assignment_timestamp", "int64", default=0, tag=0, tagged="0+", ignorable=True),
        ]),
    target_assignment_member_key=_group_key("StreamsGroupTargetAssignmentMemberKey", "21",
                                            F("member_id", "string")),
    target_assignment_member_value=Message(
        "StreamsGroupTargetAssignmentMemberValue", None, "data", "0", "0+", [
            F("active_tasks", "[]TaskIds"),
            F("standby_tasks", "[]TaskIds"),
            F("warmup_tasks", "[]TaskIds"),
        ], common={"TaskIds": _TASK_IDS}),
    current_member_assignment_key=_group_key("StreamsGroupCurrentMemberAssignmentKey", "22",
                                             F("member_id", "string")),
    current_member_assignment_value=Message(
        "StreamsGroupCurrentMemberAssignmentValue", None, "data", "0", "0+", [
            F("member_epoch", "int32"),
            F("previous_member_epoch", "int32"),
            F("state", "int8"),
            F("active_tasks", "[]TaskIds"),
            F("standby_tasks", "[]TaskIds"),
            F("warmup_tasks", "[]TaskIds"),
            F("active_tasks_pending_revocation", "[]TaskIds"),
            F("standby_tasks_pending_revocation", "[]TaskIds"),
            F("warmup_tasks_pending_revocation", "[]TaskIds"),
        ], common={"TaskIds": [
            *_TASK_IDS,
            F("assignment_epochs", "[]int32", nullable="0+", default=None, tag=0, tagged="0+"),
        ]}),
    topology_key=_group_key("StreamsGroupTopologyKey", "23"),
    topology_value=Message("StreamsGroupTopologyValue", None, "data", "0", "0+", [
        F("epoch", "int32"),
        F("subtopologies", "[]Subtopology", fields=[
            F("subtopology_id", "string"),
            F("source_topics", "[]string"),
            F("source_topic_regex", "[]string"),
            F("state_changelog_topics", "[]TopicInfo"),
            F("repartition_sink_topics", "[]string"),
            F("repartition_source_topics", "[]TopicInfo"),
            F("copartition_groups", "[]CopartitionGroup", fields=[
                F("source_topics", "[]int16"),
                F("source_topic_regex", "[]int16"),
                F("repartition_source_topics", "[]int16"),
            ]),
        ]),
    ], common={"TopicInfo": _STREAMS_TOPIC_INFO}),
)

# The share coordinator's records (``__share_group_state``): a share-partition's whole state
# (snapshot, key version 0) and the changes since (update, key version 1).
_SHARE_PARTITION_KEY = [F("group_id", "string"), F("topic_id", "uuid"), F("partition", "int32")]
_STATE_BATCH = [F("first_offset", "int64"), F("last_offset", "int64"), F("delivery_state", "int8"),
                F("delivery_count", "int16")]

SHARE_STATE_RECORDS = SimpleNamespace(
    snapshot_key=Message("ShareSnapshotKey", None, "data", "0", "none", _SHARE_PARTITION_KEY),
    snapshot_value=Message("ShareSnapshotValue", None, "data", "0", "0+", [
        F("snapshot_epoch", "int32"),
        F("state_epoch", "int32"),
        F("leader_epoch", "int32"),
        F("start_offset", "int64"),
        F("delivery_complete_count", "int32", default=-1, tag=0, tagged="0+"),
        F("create_timestamp", "int64"),
        F("write_timestamp", "int64"),
        F("state_batches", "[]StateBatch", fields=_STATE_BATCH),
    ]),
    update_key=Message("ShareUpdateKey", None, "data", "1", "none", _SHARE_PARTITION_KEY),
    update_value=Message("ShareUpdateValue", None, "data", "0", "0+", [
        F("snapshot_epoch", "int32"),
        F("leader_epoch", "int32"),
        F("start_offset", "int64"),
        F("delivery_complete_count", "int32", default=-1, tag=0, tagged="0+"),
        F("state_batches", "[]StateBatch", fields=_STATE_BATCH),
    ]),
)
