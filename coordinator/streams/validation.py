"""What KafkaApis and the coordinator's service check of a StreamsGroupHeartbeat before the
group is looked at, in Kafka's order and words: the topology's topics, the features Kafka 4.3
does not serve yet, and the request's own consistency."""

from __future__ import annotations

from protocol.errors import ErrorCode

from coordinator.consumer.manager import _blank
from coordinator.errors import GroupError

E = ErrorCode
LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2
INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state", "__share_group_state")
_LEGAL_TOPIC_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def topology_topics(topology) -> list[str]:
    """Every topic a heartbeat's topology names, first occurrences in order (KafkaApis checks
    them before the coordinator sees the request)."""
    names: dict[str, None] = {}
    for s in topology.subtopologies:
        names.update(dict.fromkeys(s.source_topics))
        names.update(dict.fromkeys(s.repartition_sink_topics))
        names.update(dict.fromkeys(t.name for t in s.repartition_source_topics))
        names.update(dict.fromkeys(t.name for t in s.state_changelog_topics))
    return list(names)


def _valid_topic_name(name: str) -> bool:
    return bool(name) and name not in (".", "..") and len(name) <= 249 and set(name) <= _LEGAL_TOPIC_CHARS


def check_topology_topics(req) -> None:
    """KafkaApis' checks of a topology's topics: no Kafka internal topic, only valid names."""
    if req.topology is None:
        return
    names = topology_topics(req.topology)
    internal = [n for n in names if n in INTERNAL_TOPICS]
    if internal:
        raise GroupError(E.STREAMS_INVALID_TOPOLOGY, f"Use of Kafka internal topics {','.join(internal)} "
                         "in a Kafka Streams topology is prohibited.")
    invalid = [n for n in names if not _valid_topic_name(n)]
    if invalid:
        raise GroupError(E.STREAMS_INVALID_TOPOLOGY, f"Topic names {','.join(invalid)} are not valid topic names.")


def validate_heartbeat(req) -> None:
    """Kafka's throwIfStreamsGroupHeartbeatRequestIsUsingUnsupportedFeatures, then
    throwIfStreamsGroupHeartbeatRequestIsInvalid, in their order."""
    def invalid(message: str):
        return GroupError(E.INVALID_REQUEST, message)
    if req.instance_id is not None:
        raise invalid("Static membership is not yet supported.")
    if req.task_offsets is not None:
        raise invalid("TaskOffsets are not supported yet.")
    if req.task_end_offsets is not None:
        raise invalid("TaskEndOffsets are not supported yet.")
    if req.warmup_tasks:
        raise invalid("WarmupTasks are not supported yet.")
    if req.topology is not None and any(s.source_topic_regex for s in req.topology.subtopologies):
        raise invalid("Regular expressions for source topics are not supported yet.")
    if _blank(req.member_id):
        raise invalid("MemberId can't be empty.")
    if _blank(req.group_id):
        raise invalid("GroupId can't be empty.")
    if _blank(req.rack_id):
        raise invalid("RackId can't be empty.")
    epoch = req.member_epoch
    if epoch == 0:
        if req.rebalance_timeout_ms == -1:
            raise invalid("RebalanceTimeoutMs must be provided in first request.")
        for name, tasks in (("ActiveTasks", req.active_tasks), ("StandbyTasks", req.standby_tasks),
                            ("WarmupTasks", req.warmup_tasks)):
            if tasks is None or tasks:
                raise invalid(f"{name} must be empty when (re-)joining.")
        if req.topology is None:
            raise invalid("Topology must be non-null when (re-)joining.")
        for s in req.topology.subtopologies:
            for t in s.state_changelog_topics:
                if t.partitions != 0:
                    raise GroupError(E.STREAMS_INVALID_TOPOLOGY, f"Changelog topic {t.name} must have an undefined "
                                     f"partition count, but it is set to {t.partitions}.")
    elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise invalid("InstanceId can't be null.")
    elif epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise invalid(f"MemberEpoch is {epoch}, but must be greater than or equal to -2.")
    sent = [t is not None for t in (req.active_tasks, req.standby_tasks, req.warmup_tasks)]
    if any(sent) and not all(sent):
        raise invalid("If one task-type is non-null, all must be non-null.")
    if epoch != 0 and req.topology is not None:
        raise invalid("Topology can only be provided when (re-)joining.")
