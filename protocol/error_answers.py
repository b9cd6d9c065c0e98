"""The answer Kafka gives when a whole request fails (its requests' ``getErrorResponse``), for
every API outside the group coordinator (whose answers live in ``coordinator/responses.py``).

Each function takes ``(version, request, error, message)`` and names every topic, partition,
resource or id the request named, each with the error. An API's declaration in the broker
points at its function here; nothing looks these up by API key.
"""

from __future__ import annotations

from .api_keys import ApiKey
from .error_messages import default_message
from .errors import ErrorCode
from .messages import RESPONSES
from .wire import ZERO_UUID


def _answer(key: ApiKey):
    return RESPONSES[key].cls


def top_level(key: ApiKey, *, message: bool = False, **empty):
    """An answer that carries only a top-level error (and ``message``, if the API has one)."""
    cls = _answer(key)

    def failed(version, request, error, text=None):
        return cls(error_code=error, **({"error_message": text} if message else {}), **empty)
    return failed


# --- the data plane ------------------------------------------------------------------------------
def metadata(version, request, error, message=None):
    cls = _answer(ApiKey.METADATA)
    # the answer's names are not nullable: a topic asked for by id comes back named ""
    return cls(error_code=error, topics=tuple(
        cls.MetadataResponseTopic(error_code=error, name=t.name or "", topic_id=t.topic_id)
        for t in request.topics or ()))


def produce(version, request, error, message=None):
    cls = _answer(ApiKey.PRODUCE)
    topic = cls.TopicProduceResponse
    return cls(responses=tuple(topic(name=t.name, topic_id=t.topic_id, partition_responses=tuple(
        topic.PartitionProduceResponse(index=p.index, error_code=error, base_offset=-1)
        for p in t.partition_data)) for t in request.topic_data))


def fetch(version, request, error, message=None):
    cls = _answer(ApiKey.FETCH)
    topic = cls.FetchableTopicResponse
    return cls(error_code=error if version >= 7 else ErrorCode.NONE, responses=tuple(
        topic(topic=t.topic, topic_id=t.topic_id, partitions=tuple(
            topic.PartitionData(partition_index=p.partition, error_code=error, high_watermark=-1,
                                records=b"") for p in t.partitions)) for t in request.topics))


def list_offsets(version, request, error, message=None):
    cls = _answer(ApiKey.LIST_OFFSETS)
    topic = cls.ListOffsetsTopicResponse
    return cls(topics=tuple(topic(name=t.name, partitions=tuple(
        topic.ListOffsetsPartitionResponse(partition_index=p.partition_index, error_code=error)
        for p in t.partitions)) for t in request.topics))


def describe_producers(version, request, error, message=None):
    cls = _answer(ApiKey.DESCRIBE_PRODUCERS)
    topic = cls.TopicResponse
    return cls(topics=tuple(topic(name=t.name, partitions=tuple(
        topic.PartitionResponse(partition_index=p, error_code=error) for p in t.partition_indexes))
        for t in request.topics))


def offset_for_leader_epoch(version, request, error, message=None):
    cls = _answer(ApiKey.OFFSET_FOR_LEADER_EPOCH)
    topic = cls.OffsetForLeaderTopicResult
    return cls(topics=tuple(topic(topic=t.topic, partitions=tuple(
        topic.EpochEndOffset(error_code=error, partition=p.partition) for p in t.partitions))
        for t in request.topics))


# --- topic and cluster admin -----------------------------------------------------------------------
def create_topics(version, request, error, message=None):
    cls = _answer(ApiKey.CREATE_TOPICS)
    return cls(topics=tuple(cls.CreatableTopicResult(name=t.name, error_code=error, error_message=message)
                            for t in request.topics))


def delete_topics(version, request, error, message=None):
    cls = _answer(ApiKey.DELETE_TOPICS)
    wanted = [(t.name, t.topic_id) for t in request.topics] if version >= 6 else \
        [(name, ZERO_UUID) for name in request.topic_names]
    return cls(responses=tuple(cls.DeletableTopicResult(name=name, topic_id=topic_id, error_code=error,
                                                        error_message=message) for name, topic_id in wanted))


def create_partitions(version, request, error, message=None):
    cls = _answer(ApiKey.CREATE_PARTITIONS)
    return cls(results=tuple(cls.CreatePartitionsTopicResult(name=t.name, error_code=error, error_message=message)
                             for t in request.topics))


def delete_records(version, request, error, message=None):
    cls = _answer(ApiKey.DELETE_RECORDS)
    topic = cls.DeleteRecordsTopicResult
    return cls(topics=tuple(topic(name=t.name, partitions=tuple(
        topic.DeleteRecordsPartitionResult(partition_index=p.partition_index, low_watermark=-1, error_code=error)
        for p in t.partitions)) for t in request.topics))


def elect_leaders(version, request, error, message=None):
    cls = _answer(ApiKey.ELECT_LEADERS)
    topic = cls.ReplicaElectionResult
    return cls(error_code=error if version >= 1 else 0, replica_election_results=tuple(
        topic(topic=t.topic, partition_result=tuple(
            topic.PartitionResult(partition_id=p, error_code=error, error_message=message) for p in t.partitions))
        for t in request.topic_partitions or ()))


def describe_log_dirs(version, request, error, message=None):
    return _answer(ApiKey.DESCRIBE_LOG_DIRS)(error_code=error if version >= 3 else 0)


def describe_configs(version, request, error, message=None):
    cls = _answer(ApiKey.DESCRIBE_CONFIGS)
    return cls(results=tuple(
        cls.DescribeConfigsResult(error_code=error, error_message=message, resource_type=r.resource_type,
                                  resource_name=r.resource_name) for r in request.resources))


def altered_configs(key: ApiKey):
    """AlterConfigs' and IncrementalAlterConfigs' answer: each resource with the error."""
    cls = _answer(key)

    def failed(version, request, error, message=None):
        return cls(responses=tuple(
            cls.AlterConfigsResourceResponse(error_code=error, error_message=message, resource_type=r.resource_type,
                                             resource_name=r.resource_name) for r in request.resources))
    return failed


# --- authentication, SCRAM users, ACLs -------------------------------------------------------------
def describe_scram_credentials(version, request, error, message=None):
    cls = _answer(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS)
    return cls(error_code=error, error_message=message, results=tuple(
        cls.DescribeUserScramCredentialsResult(user=u.name, error_code=error, error_message=message,
                                               credential_infos=()) for u in request.users or ()))


def alter_scram_credentials(version, request, error, message=None):
    cls = _answer(ApiKey.ALTER_USER_SCRAM_CREDENTIALS)
    users = sorted({c.name for c in (*request.deletions, *request.upsertions)})
    return cls(results=tuple(cls.AlterUserScramCredentialsResult(user=u, error_code=error, error_message=message)
                             for u in users))


def create_acls(version, request, error, message=None):
    cls = _answer(ApiKey.CREATE_ACLS)
    return cls(results=tuple(cls.AclCreationResult(error_code=error, error_message=message)
                             for _ in request.creations))


def delete_acls(version, request, error, message=None):
    cls = _answer(ApiKey.DELETE_ACLS)
    return cls(filter_results=tuple(cls.DeleteAclsFilterResult(error_code=error, error_message=message,
                                                               matching_acls=()) for _ in request.filters))


# --- coordinators ------------------------------------------------------------------------------------
def find_coordinator(version, request, error, message=None):
    cls = _answer(ApiKey.FIND_COORDINATOR)
    failed = dict(error_code=error, node_id=-1, host="", port=-1, error_message=error.name)
    if version < 4:
        return cls(**failed)
    return cls(coordinators=tuple(cls.Coordinator(key=k, **failed) for k in request.coordinator_keys))


def init_producer_id(version, request, error, message=None):
    return _answer(ApiKey.INIT_PRODUCER_ID)(error_code=error, producer_id=-1, producer_epoch=-1)


def add_partitions_to_txn(version, request, error, message=None):
    """A client's request (v3 and below): each partition; a broker's batch: the top-level code."""
    cls = _answer(ApiKey.ADD_PARTITIONS_TO_TXN)
    if version >= 4:
        return cls(error_code=error)
    topic = cls.AddPartitionsToTxnTopicResult
    return cls(results_by_topic_v3_and_below=tuple(topic(name=t.name, results_by_partition=tuple(
        topic.AddPartitionsToTxnPartitionResult(partition_index=p, partition_error_code=error)
        for p in t.partitions)) for t in request.v3_and_below_topics))


def describe_transactions(version, request, error, message=None):
    cls = _answer(ApiKey.DESCRIBE_TRANSACTIONS)
    return cls(transaction_states=tuple(cls.TransactionState(error_code=error, transactional_id=t)
                                        for t in request.transactional_ids))


# --- share groups (KIP-932) and streams groups (KIP-1071) ------------------------------------------
def described_groups(key: ApiKey):
    """ShareGroupDescribe, StreamsGroupDescribe: each group asked for, with the error."""
    cls = _answer(key)

    def failed(version, request, error, message=None):
        return cls(groups=tuple(cls.DescribedGroup(group_id=g, error_code=error) for g in request.group_ids))
    return failed


def describe_share_group_offsets(version, request, error, message=None):
    cls = _answer(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS)
    group = cls.DescribeShareGroupOffsetsResponseGroup
    return cls(groups=tuple(group(group_id=g.group_id, error_code=error, error_message=message)
                            for g in request.groups))


def with_default_message(key: ApiKey):
    """AlterShareGroupOffsets, DeleteShareGroupOffsets: a top-level error with its message, or
    the error's default message (Kafka's getErrorResponse)."""
    cls = _answer(key)

    def failed(version, request, error, message=None):
        return cls(error_code=error, error_message=message or default_message(error))
    return failed


#: the share- and streams-group heartbeats and describes (the group coordinator's): their answers
#: to a whole request refused
SHARE_GROUP_HEARTBEAT_FAILED = top_level(ApiKey.SHARE_GROUP_HEARTBEAT)
SHARE_GROUP_DESCRIBE_FAILED = described_groups(ApiKey.SHARE_GROUP_DESCRIBE)
STREAMS_GROUP_HEARTBEAT_FAILED = top_level(ApiKey.STREAMS_GROUP_HEARTBEAT)
STREAMS_GROUP_DESCRIBE_FAILED = described_groups(ApiKey.STREAMS_GROUP_DESCRIBE)
