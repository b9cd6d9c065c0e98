"""Kafka's answer when a whole data-plane request fails (its ``getErrorResponse``), and the
refusal the handlers raise for it.

Every topic the request names gets the error; nothing else is reported. Produce, Fetch,
ListOffsets and InitProducerId share the builders fault injection uses.
"""

from __future__ import annotations

import logging

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.messages import RESPONSES
from protocol.wire import ZERO_UUID

from protocol.logtext import safe
from protocol.registry import API_TABLE

from broker.data.topics.errors import TopicsError
from broker.faults.rules import error_answer

log = logging.getLogger("groupbroker.data")

Metadata = RESPONSES[ApiKey.METADATA].cls
CreateTopics = RESPONSES[ApiKey.CREATE_TOPICS].cls
DeleteTopics = RESPONSES[ApiKey.DELETE_TOPICS].cls
CreatePartitions = RESPONSES[ApiKey.CREATE_PARTITIONS].cls
DeleteRecords = RESPONSES[ApiKey.DELETE_RECORDS].cls
ElectLeaders = RESPONSES[ApiKey.ELECT_LEADERS].cls
DescribeCluster = RESPONSES[ApiKey.DESCRIBE_CLUSTER].cls
DescribeLogDirs = RESPONSES[ApiKey.DESCRIBE_LOG_DIRS].cls
DescribeConfigs = RESPONSES[ApiKey.DESCRIBE_CONFIGS].cls
#: Kafka's QuorumController.MAX_RECORDS_PER_USER_OP and the PolicyViolationException message
#: its controller answers when one request would write more metadata records than that.
MAX_RECORDS_PER_USER_OP = 10_000
#: ReplicationControlManager.MAX_PARTITIONS_PER_BATCH: the partitions one CreateTopics may make
MAX_PARTITIONS_PER_BATCH = 10_000
EXCESSIVE_BATCH = "Unable to perform excessively large batch operation."
#: The longest error message an answer carries: messages quote client strings (topic names),
#: and a non-flexible version cannot carry a string over 32,767 bytes.
MESSAGE_LIMIT = 1000


class Refused(Exception):
    """A request the data plane turns down with a specific Kafka error."""

    def __init__(self, error_code: ErrorCode, message: str = ""):
        super().__init__(message)
        self.error_code = error_code


def error_message(e: Exception) -> str | None:
    """``e``'s text for an answer's error_message, cut to :data:`MESSAGE_LIMIT` characters."""
    return cut(str(e)) or None


def cut(text: str) -> str:
    """``text`` cut to :data:`MESSAGE_LIMIT` characters (messages quote client strings)."""
    return text[:MESSAGE_LIMIT] + "..." if len(text) > MESSAGE_LIMIT else text


def whole_request_error(key: int, version: int, body, error: ErrorCode, message: str | None = None):
    """The answer to data-plane request ``body`` (API ``key`` at ``version``) that failed with ``error``."""
    if key == ApiKey.METADATA:
        topic = Metadata.MetadataResponseTopic
        # the answer's names are not nullable: a topic asked for by id comes back named ""
        return Metadata(error_code=error, topics=tuple(
            topic(error_code=error, name=t.name or "", topic_id=t.topic_id) for t in body.topics or ()))
    if key == ApiKey.CREATE_TOPICS:
        result = CreateTopics.CreatableTopicResult
        return CreateTopics(topics=tuple(result(name=t.name, error_code=error, error_message=message)
                                         for t in body.topics))
    if key == ApiKey.DELETE_TOPICS:
        result = DeleteTopics.DeletableTopicResult
        wanted = [(t.name, t.topic_id) for t in body.topics] if version >= 6 else \
            [(name, ZERO_UUID) for name in body.topic_names]
        return DeleteTopics(responses=tuple(result(name=name, topic_id=topic_id, error_code=error,
                                                   error_message=message) for name, topic_id in wanted))
    if key in _ADMIN_ANSWERS:
        return _ADMIN_ANSWERS[key](version, body, error, message)
    return error_answer(key, version, body, error)


def _create_partitions(version, body, error, message):
    result = CreatePartitions.CreatePartitionsTopicResult
    return CreatePartitions(results=tuple(result(name=t.name, error_code=error, error_message=message)
                                          for t in body.topics))


def _delete_records(version, body, error, message):
    topic = DeleteRecords.DeleteRecordsTopicResult
    part = topic.DeleteRecordsPartitionResult
    return DeleteRecords(topics=tuple(topic(name=t.name, partitions=tuple(
        part(partition_index=p.partition_index, low_watermark=-1, error_code=error)
        for p in t.partitions)) for t in body.topics))


def _offset_for_leader_epoch(version, body, error, message):
    answer = RESPONSES[ApiKey.OFFSET_FOR_LEADER_EPOCH].cls
    topic = answer.OffsetForLeaderTopicResult
    return answer(topics=tuple(topic(topic=t.topic, partitions=tuple(
        topic.EpochEndOffset(error_code=error, partition=p.partition) for p in t.partitions))
        for t in body.topics))


def _elect_leaders(version, body, error, message):
    topic = ElectLeaders.ReplicaElectionResult
    part = topic.PartitionResult
    return ElectLeaders(error_code=error if version >= 1 else 0, replica_election_results=tuple(
        topic(topic=t.topic, partition_result=tuple(
            part(partition_id=p, error_code=error, error_message=message) for p in t.partitions))
        for t in body.topic_partitions or ()))


def _describe_configs(version, body, error, message):
    result = DescribeConfigs.DescribeConfigsResult
    return DescribeConfigs(results=tuple(
        result(error_code=error, error_message=message, resource_type=r.resource_type,
               resource_name=r.resource_name) for r in body.resources))


def _altered(answer):
    """AlterConfigs' and IncrementalAlterConfigs' answer: each resource with the error."""
    def refuse(version, body, error, message):
        response = answer.AlterConfigsResourceResponse
        return answer(responses=tuple(
            response(error_code=error, error_message=message, resource_type=r.resource_type,
                     resource_name=r.resource_name) for r in body.resources))
    return refuse


#: The admin APIs' answers (KafkaApis and ControllerApis answer these with getErrorResponse too).
def _scram_described(version, body, error, message):
    answer = RESPONSES[ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS].cls
    result = answer.DescribeUserScramCredentialsResult
    return answer(error_code=error, error_message=message, results=tuple(
        result(user=u.name, error_code=error, error_message=message, credential_infos=()) for u in body.users or ()))


def _scram_altered(version, body, error, message):
    answer = RESPONSES[ApiKey.ALTER_USER_SCRAM_CREDENTIALS].cls
    users = sorted({c.name for c in (*body.deletions, *body.upsertions)})
    return answer(results=tuple(answer.AlterUserScramCredentialsResult(user=u, error_code=error, error_message=message)
                                for u in users))


def _acls_created(version, body, error, message):
    answer = RESPONSES[ApiKey.CREATE_ACLS].cls
    return answer(results=tuple(answer.AclCreationResult(error_code=error, error_message=message)
                                for _ in body.creations))


def _acls_deleted(version, body, error, message):
    answer = RESPONSES[ApiKey.DELETE_ACLS].cls
    return answer(filter_results=tuple(answer.DeleteAclsFilterResult(error_code=error, error_message=message,
                                                                     matching_acls=()) for _ in body.filters))


_ADMIN_ANSWERS = {
    # authentication and its users, ACLs
    ApiKey.SASL_HANDSHAKE: lambda version, body, error, message: RESPONSES[ApiKey.SASL_HANDSHAKE].cls(
        error_code=error, mechanisms=()),
    ApiKey.SASL_AUTHENTICATE: lambda version, body, error, message: RESPONSES[ApiKey.SASL_AUTHENTICATE].cls(
        error_code=error, error_message=message, auth_bytes=b""),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: _scram_described,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: _scram_altered,
    ApiKey.CREATE_ACLS: _acls_created,
    ApiKey.DESCRIBE_ACLS: lambda version, body, error, message: RESPONSES[ApiKey.DESCRIBE_ACLS].cls(
        error_code=error, error_message=message, resources=()),
    ApiKey.DELETE_ACLS: _acls_deleted,
    ApiKey.CREATE_PARTITIONS: _create_partitions,
    ApiKey.DELETE_RECORDS: _delete_records,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: _offset_for_leader_epoch,
    ApiKey.ELECT_LEADERS: _elect_leaders,
    ApiKey.DESCRIBE_CLUSTER: lambda version, body, error, message: DescribeCluster(
        error_code=error, error_message=message),
    ApiKey.DESCRIBE_LOG_DIRS: lambda version, body, error, message: DescribeLogDirs(
        error_code=error if version >= 3 else 0),
    ApiKey.DESCRIBE_CONFIGS: _describe_configs,
    ApiKey.ALTER_CONFIGS: _altered(RESPONSES[ApiKey.ALTER_CONFIGS].cls),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: _altered(RESPONSES[ApiKey.INCREMENTAL_ALTER_CONFIGS].cls),
}


def answering_errors(handler):
    """``handler`` answering with Kafka's whole-request error instead of raising: a refused
    request, a storage failure, or (as Kafka's UNKNOWN_SERVER_ERROR) a bug of ours."""
    async def decide(ctx, req):
        try:
            return await handler(ctx, req)
        except (Refused, TopicsError) as e:
            log.warning("%s v%d from client %s: %s (%s)", API_TABLE[ctx.api_key].name, ctx.version,
                        safe(ctx.client_id), e.error_code.name, safe(str(e)))
            error, message = e.error_code, error_message(e)
        except Exception:        # a bug must cost its request an error answer, never the connection
            log.exception("%s v%d from client %s failed; answering UNKNOWN_SERVER_ERROR",
                          API_TABLE[ctx.api_key].name, ctx.version, safe(ctx.client_id))
            error, message = ErrorCode.UNKNOWN_SERVER_ERROR, None
        if ctx.api_key == ApiKey.PRODUCE and req.acks == 0:
            return None                  # a produce with acks=0 is never answered
        return whole_request_error(ctx.api_key, ctx.version, req, error, message)
    return decide
