"""The wire half of ``groupbroker groups``: blocking Kafka requests to any Kafka broker.

Our blocking client (kafka_client/blocking.py), no trio: ApiVersions picks, per API, the highest version
both sides speak; FindCoordinator locates a group; the functions here return plain data that
the commands turn into Kafka's tables.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.exceptions import DecodeError, ProtocolError
from protocol.wire import ZERO_UUID
from protocol.messages import DATA, REQUESTS
from protocol.payloads import decode_payload

from kafka_client.blocking import BlockingClient, ConnectionFailed

log = logging.getLogger(__name__)

LATEST, EARLIEST = -1, -2


class GroupsError(Exception):
    """A failure to report on stderr (exit code 1)."""


class KafkaError(GroupsError):
    """A Kafka error code in a response."""

    def __init__(self, code: int, what: str):
        self.code = ErrorCode.lookup(code)
        self.what = what
        super().__init__(f"{what}: {self.code.name}")


def _check(code: int, what: str) -> None:
    if code != ErrorCode.NONE:
        raise KafkaError(code, what)


# --------------------------------------------------------------------------- connection

#: The last versions naming topics by name: this tool names them so, as Kafka's admin client
#: does (its forTopicNames builders stop before v10, where topics are named by id).
BY_NAME_UNTIL = {ApiKey.OFFSET_COMMIT: 9, ApiKey.OFFSET_FETCH: 9}


class Connection:
    """One blocking connection to one broker, with versions negotiated by ApiVersions."""

    def __init__(self, host: str, port: int, client_id: str = "groupbroker-cli", timeout: float = 30.0):
        self.address = f"{host}:{port}"
        try:
            self.client = BlockingClient(host, port, client_id=client_id, timeout=timeout)
            self.versions = self.client.negotiate()
        except (ConnectionFailed, ProtocolError) as e:
            raise GroupsError(str(e)) from None
        log.debug("negotiated versions with %s: %s", self.address, self.versions)

    def close(self) -> None:
        self.client.close()

    def version(self, api_key: int) -> int:
        try:
            return min(self.versions[api_key], BY_NAME_UNTIL.get(api_key, 0x7FFF))
        except KeyError:
            raise GroupsError(f"{self.address} shares no version of {REQUESTS[api_key].name} "
                              "with this tool") from None

    def call(self, api_key: int, build):
        """Send ``build(version)`` at the negotiated version; the decoded answer."""
        version = self.version(api_key)
        try:
            return self.client.call(api_key, version, build(version))
        except ConnectionFailed as e:
            raise GroupsError(str(e)) from None
        except ProtocolError as e:        # DecodeError included
            raise GroupsError(f"bad {REQUESTS[api_key].name} answer from {self.address}: {e}") from None


def parse_address(text: str) -> tuple[str, int]:
    host, sep, port = text.strip().rpartition(":")
    if not sep or not port.isdigit():
        raise GroupsError(f"bad --bootstrap-server {text!r}: expected HOST:PORT")
    return host.strip("[]") or "127.0.0.1", int(port)


# --------------------------------------------------------------------------- cluster

@dataclass
class Cluster:
    """The bootstrap connection plus connections opened to other brokers on demand."""

    bootstrap: Connection
    brokers: dict[int, tuple[str, int]] = field(default_factory=dict)
    _open: dict[tuple[str, int], Connection] = field(default_factory=dict)

    def connection(self, host: str, port: int) -> Connection:
        if self.bootstrap.address == f"{host}:{port}":
            return self.bootstrap
        if (host, port) not in self._open:
            self._open[(host, port)] = Connection(host, port)
        return self._open[(host, port)]

    def node(self, node_id: int) -> Connection:
        if node_id not in self.brokers:
            raise GroupsError(f"unknown broker id {node_id}")
        return self.connection(*self.brokers[node_id])

    def close(self) -> None:
        for conn in self._open.values():
            conn.close()
        self.bootstrap.close()


def metadata(cluster: Cluster, topics: list[str] | None):
    """Metadata for ``topics`` (None: all); records the brokers in ``cluster``."""
    cls = REQUESTS[ApiKey.METADATA].cls

    def build(v):
        names = None if topics is None else tuple(cls.MetadataRequestTopic(name=t) for t in topics)
        if names is None and v == 0:
            names = ()
        kw = {"allow_auto_topic_creation": False} if v >= 4 else {}
        return cls(topics=names, **kw)
    answer = cluster.bootstrap.call(ApiKey.METADATA, build)
    cluster.brokers = {b.node_id: (b.host, b.port) for b in answer.brokers}
    return answer


def find_coordinator(cluster: Cluster, group: str) -> tuple[int, str, int]:
    """(node id, host, port) of the group's coordinator."""
    cls = REQUESTS[ApiKey.FIND_COORDINATOR].cls

    def build(v):
        if v >= 4:
            return cls(key_type=0, coordinator_keys=(group,))
        return cls(key=group, key_type=0) if v >= 1 else cls(key=group)
    answer = cluster.bootstrap.call(ApiKey.FIND_COORDINATOR, build)
    entry = answer.coordinators[0] if cluster.bootstrap.version(ApiKey.FIND_COORDINATOR) >= 4 else answer
    _check(entry.error_code, f"FindCoordinator for group '{group}'")
    return entry.node_id, entry.host, entry.port


@dataclass
class Member:
    member_id: str
    client_id: str
    host: str
    partitions: list[tuple[str, int]]
    group_instance_id: str | None = None
    #: consumer groups only (ConsumerGroupDescribe): the member epoch, the target assignment,
    #: and whether it speaks the consumer protocol (False: a classic member; None: unknown)
    member_epoch: int | None = None
    target: list[tuple[str, int]] | None = None
    upgraded: bool | None = None


@dataclass
class Group:
    """A DescribeGroups or ConsumerGroupDescribe answer; ``not_found`` holds the broker's
    message for GROUP_ID_NOT_FOUND (DescribeGroups v6+ answers so for a group it does not know;
    older versions say Dead). ``protocol`` is a classic group's assignment strategy or a
    consumer group's server assignor; the epochs are a consumer group's."""

    group_id: str
    state: str
    protocol: str
    members: list[Member]
    not_found: str | None = None
    type: str = "classic"
    group_epoch: int | None = None
    assignment_epoch: int | None = None


def describe_group(coordinator: Connection, group: str) -> Group:
    """The group as Kafka's Admin.describeConsumerGroups sees it: ConsumerGroupDescribe first
    where the coordinator serves it, DescribeGroups for a group it says is not a consumer group
    (GROUP_ID_NOT_FOUND) or when it does not serve it."""
    if ApiKey.CONSUMER_GROUP_DESCRIBE in coordinator.versions:
        described = describe_consumer_group(coordinator, group)
        if described is not None:
            return described
    return describe_classic_group(coordinator, group)


def describe_consumer_group(coordinator: Connection, group: str) -> Group | None:
    """ConsumerGroupDescribe (KIP-848); None when the broker says the group is not a consumer
    group (or does not know it), as Kafka's admin client then asks DescribeGroups."""
    cls = REQUESTS[ApiKey.CONSUMER_GROUP_DESCRIBE].cls
    answer = coordinator.call(ApiKey.CONSUMER_GROUP_DESCRIBE,
                              lambda v: cls(group_ids=(group,), include_authorized_operations=False))
    described = answer.groups[0]
    if described.error_code in (ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.UNSUPPORTED_VERSION):
        return None
    _check(described.error_code, f"ConsumerGroupDescribe for group '{group}'")
    members = [Member(m.member_id, m.client_id, m.client_host, _partitions(m.assignment),
                      m.instance_id, member_epoch=m.member_epoch,
                      target=_partitions(m.target_assignment),
                      upgraded=None if m.member_type == -1 else m.member_type == 1)
               for m in described.members]
    return Group(group, described.group_state, described.assignor_name, members, type="consumer",
                 group_epoch=described.group_epoch, assignment_epoch=described.assignment_epoch)


def _partitions(assignment) -> list[tuple[str, int]]:
    return sorted((tp.topic_name, p) for tp in assignment.topic_partitions for p in tp.partitions)


def describe_classic_group(coordinator: Connection, group: str) -> Group:
    """DescribeGroups: a classic group (or a Dead / not-found answer)."""
    cls = REQUESTS[ApiKey.DESCRIBE_GROUPS].cls
    answer = coordinator.call(ApiKey.DESCRIBE_GROUPS, lambda v: cls(groups=(group,)))
    described = answer.groups[0]
    if described.error_code == ErrorCode.GROUP_ID_NOT_FOUND:
        return Group(group, "Dead", "", [], described.error_message or f"Group {group} not found.")
    _check(described.error_code, f"DescribeGroups for group '{group}'")
    members = [Member(m.member_id, m.client_id, m.client_host, _assigned(m.member_assignment),
                      m.group_instance_id) for m in described.members]
    return Group(group, described.group_state, described.protocol_data, members)


def _assigned(data: bytes) -> list[tuple[str, int]]:
    if not data:
        return []
    try:
        _, body = decode_payload(DATA["ConsumerProtocolAssignment"], data)
    except DecodeError as e:
        log.warning("undecodable member assignment: %s", e)
        return []
    return sorted((tp.topic, p) for tp in body.assigned_partitions for p in tp.partitions)


def fetch_committed(coordinator: Connection, group: str) -> dict[tuple[str, int], tuple[int, int]]:
    """(offset, leader epoch or -1) of every partition of ``group`` with a committed offset
    (OffsetFetch with topics = null)."""
    cls = REQUESTS[ApiKey.OFFSET_FETCH].cls
    if coordinator.version(ApiKey.OFFSET_FETCH) < 2:
        raise GroupsError(f"{coordinator.address} cannot fetch all offsets of a group (OffsetFetch < v2)")

    def build(v):
        if v >= 8:
            return cls(groups=(cls.OffsetFetchRequestGroup(group_id=group, topics=None),))
        return cls(group_id=group, topics=None)
    answer = coordinator.call(ApiKey.OFFSET_FETCH, build)
    if coordinator.version(ApiKey.OFFSET_FETCH) >= 8:
        answer = answer.groups[0]
    _check(answer.error_code, f"OffsetFetch for group '{group}'")
    offsets = {}
    for topic in answer.topics:
        for p in topic.partitions:
            _check(p.error_code, f"OffsetFetch for {topic.name}-{p.partition_index}")
            if p.committed_offset >= 0:
                offsets[(topic.name, p.partition_index)] = (p.committed_offset, p.committed_leader_epoch)
    return offsets


def fetch_offsets(coordinator: Connection, group: str) -> dict[tuple[str, int], int]:
    """Committed offsets of every partition of ``group``."""
    return {tp: offset for tp, (offset, _) in fetch_committed(coordinator, group).items()}


def list_offsets(cluster: Cluster, partitions: list[tuple[str, int]], timestamp: int
                 ) -> dict[tuple[str, int], int]:
    """Offsets at ``timestamp`` (LATEST, EARLIEST or milliseconds), asked of each partition's
    leader; a partition that failed is missing, one with no record that late maps to -1."""
    if not partitions:
        return {}
    topics = sorted({t for t, _ in partitions})
    meta = metadata(cluster, topics)
    leaders = {(t.name, p.partition_index): p.leader_id for t in meta.topics for p in t.partitions}
    by_leader: dict[int, list[tuple[str, int]]] = {}
    for tp in partitions:
        if tp in leaders:
            by_leader.setdefault(leaders[tp], []).append(tp)
    found = {}
    for leader, tps in by_leader.items():
        found.update(_list_offsets_on(cluster.node(leader), tps, timestamp))
    return found


def _list_offsets_on(conn: Connection, tps: list[tuple[str, int]], timestamp: int):
    cls = REQUESTS[ApiKey.LIST_OFFSETS].cls
    topics = {}
    for t, p in tps:
        topics.setdefault(t, []).append(cls.ListOffsetsTopic.ListOffsetsPartition(partition_index=p, timestamp=timestamp))

    def build(v):
        body = tuple(cls.ListOffsetsTopic(name=t, partitions=tuple(ps)) for t, ps in topics.items())
        return cls(replica_id=-1, topics=body, **({"isolation_level": 0} if v >= 2 else {}))
    answer = conn.call(ApiKey.LIST_OFFSETS, build)
    return {(t.name, p.partition_index): p.offset for t in answer.topics for p in t.partitions
            if p.error_code == ErrorCode.NONE}


def topic_partitions(cluster: Cluster, topic: str) -> list[tuple[str, int]]:
    meta = metadata(cluster, [topic])
    for t in meta.topics:
        if t.name == topic:
            _check(t.error_code, f"topic '{topic}'")
            return sorted((topic, p.partition_index) for p in t.partitions)
    raise GroupsError(f"topic '{topic}' not found")


def list_groups(cluster: Cluster, states: list[str] | None = None, types: list[str] | None = None
                ) -> dict[str, tuple[str, str, str]]:
    """ListGroups on every broker: group id -> (protocol type, state, type); a state or type
    filter needs ListGroups v4 / v5 and is applied by the broker."""
    metadata(cluster, [])
    conns = [cluster.node(n) for n in sorted(cluster.brokers)] or [cluster.bootstrap]
    cls = REQUESTS[ApiKey.LIST_GROUPS].cls
    groups: dict[str, tuple[str, str, str]] = {}
    for conn in conns:
        version = conn.version(ApiKey.LIST_GROUPS)
        if states and version < 4 or types and version < 5:
            raise GroupsError(f"{conn.address} cannot filter groups by state or type "
                              f"(ListGroups v{version})")
        kw = {"states_filter": tuple(states or ())} if version >= 4 else {}
        if version >= 5:
            kw["types_filter"] = tuple(types or ())
        answer = conn.call(ApiKey.LIST_GROUPS, lambda v: cls(**kw))
        _check(answer.error_code, "ListGroups")
        for g in answer.groups:
            groups[g.group_id] = (g.protocol_type, getattr(g, "group_state", ""),
                                  getattr(g, "group_type", ""))
    return groups


def commit_offsets(coordinator: Connection, group: str, targets: dict[tuple[str, int], int]) -> None:
    """OffsetCommit as an admin does (no generation, no member); any partition error raises."""
    cls = REQUESTS[ApiKey.OFFSET_COMMIT].cls
    by_topic: dict[str, list] = {}
    for (t, p), off in sorted(targets.items()):
        by_topic.setdefault(t, []).append(cls.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
            partition_index=p, committed_offset=off, committed_metadata=""))

    def build(v):
        kw = {"group_instance_id": None} if v >= 7 else {}
        topics = tuple(cls.OffsetCommitRequestTopic(name=t, partitions=tuple(ps))
                       for t, ps in by_topic.items())
        return cls(group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=topics, **kw)
    answer = coordinator.call(ApiKey.OFFSET_COMMIT, build)
    for topic in answer.topics:
        for p in topic.partitions:
            _check(p.error_code, f"OffsetCommit for {topic.name}-{p.partition_index}")


def delete_groups(coordinator: Connection, groups: list[str]) -> dict[str, ErrorCode]:
    """DeleteGroups for ``groups`` (all coordinated by ``coordinator``): group -> error code."""
    cls = REQUESTS[ApiKey.DELETE_GROUPS].cls
    answer = coordinator.call(ApiKey.DELETE_GROUPS, lambda v: cls(groups_names=tuple(groups)))
    return {r.group_id: ErrorCode.lookup(r.error_code) for r in answer.results}


def delete_offsets(coordinator: Connection, group: str, partitions: list[tuple[str, int]]
                   ) -> tuple[ErrorCode, dict[tuple[str, int], ErrorCode]]:
    """OffsetDelete: the top-level error and each partition's."""
    cls = REQUESTS[ApiKey.OFFSET_DELETE].cls
    by_topic: dict[str, list] = {}
    for t, p in partitions:
        by_topic.setdefault(t, []).append(cls.OffsetDeleteRequestTopic.OffsetDeleteRequestPartition(
            partition_index=p))
    topics = tuple(cls.OffsetDeleteRequestTopic(name=t, partitions=tuple(ps)) for t, ps in by_topic.items())
    answer = coordinator.call(ApiKey.OFFSET_DELETE, lambda v: cls(group_id=group, topics=topics))
    return ErrorCode.lookup(answer.error_code), {
        (t.name, p.partition_index): ErrorCode.lookup(p.error_code)
        for t in answer.topics for p in t.partitions}




# --------------------------------------------------------------------------- share groups (KIP-932)

def describe_share_group(coordinator: Connection, group: str) -> Group:
    """ShareGroupDescribe; KafkaError (with the broker's message in ``what``) for a group the
    coordinator does not know as a share group, as Kafka's admin client fails the describe."""
    cls = REQUESTS[ApiKey.SHARE_GROUP_DESCRIBE].cls
    answer = coordinator.call(ApiKey.SHARE_GROUP_DESCRIBE,
                              lambda v: cls(group_ids=(group,), include_authorized_operations=False))
    described = answer.groups[0]
    if described.error_code != ErrorCode.NONE:
        raise KafkaError(described.error_code, described.error_message or "")
    members = [Member(m.member_id, m.client_id, m.client_host, _partitions(m.assignment), member_epoch=m.member_epoch)
               for m in described.members]
    return Group(group, described.group_state, described.assignor_name, members, type="share",
                 group_epoch=described.group_epoch, assignment_epoch=described.assignment_epoch)


@dataclass
class ShareOffset:
    """A share-partition's start offset (-1: none yet), leader epoch and lag (-1: unknown)."""

    start_offset: int
    leader_epoch: int
    lag: int


def share_offsets(coordinator: Connection, group: str) -> dict[tuple[str, int], ShareOffset]:
    """DescribeShareGroupOffsets of every partition of ``group``; partitions answered with an
    error are left out, as Kafka's admin client leaves them out."""
    cls = REQUESTS[ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS].cls
    answer = coordinator.call(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, lambda v: cls(groups=(
        cls.DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=None),)))
    described = answer.groups[0]
    if described.error_code != ErrorCode.NONE:
        raise KafkaError(described.error_code, described.error_message or "")
    return {(t.topic_name, p.partition_index): ShareOffset(p.start_offset, p.leader_epoch, p.lag)
            for t in described.topics for p in t.partitions if p.error_code == ErrorCode.NONE}


def alter_share_offsets(coordinator: Connection, group: str, targets: dict[tuple[str, int], int]
                        ) -> tuple[ErrorCode, str | None, dict[tuple[str, int], tuple[ErrorCode, str | None]]]:
    """AlterShareGroupOffsets: the group's error and message, and each partition's."""
    cls = REQUESTS[ApiKey.ALTER_SHARE_GROUP_OFFSETS].cls
    topic_cls = cls.AlterShareGroupOffsetsRequestTopic
    by_topic: dict[str, list] = {}
    for (t, p), offset in sorted(targets.items()):
        by_topic.setdefault(t, []).append(topic_cls.AlterShareGroupOffsetsRequestPartition(
            partition_index=p, start_offset=offset))
    answer = coordinator.call(ApiKey.ALTER_SHARE_GROUP_OFFSETS, lambda v: cls(group_id=group, topics=tuple(
        topic_cls(topic_name=t, partitions=tuple(ps)) for t, ps in by_topic.items())))
    return ErrorCode.lookup(answer.error_code), answer.error_message, {
        (t.topic_name, p.partition_index): (ErrorCode.lookup(p.error_code), p.error_message)
        for t in answer.responses for p in t.partitions}


def delete_share_offsets(coordinator: Connection, group: str, topics: list[str]
                         ) -> tuple[ErrorCode, str | None, dict[str, tuple[ErrorCode, str | None]]]:
    """DeleteShareGroupOffsets: the group's error and message, and each topic's."""
    cls = REQUESTS[ApiKey.DELETE_SHARE_GROUP_OFFSETS].cls
    answer = coordinator.call(ApiKey.DELETE_SHARE_GROUP_OFFSETS, lambda v: cls(group_id=group, topics=tuple(
        cls.DeleteShareGroupOffsetsRequestTopic(topic_name=t) for t in topics)))
    return ErrorCode.lookup(answer.error_code), answer.error_message, {
        t.topic_name: (ErrorCode.lookup(t.error_code), t.error_message) for t in answer.responses}


# --------------------------------------------------------------------------- streams groups (KIP-1071)

@dataclass
class StreamsMember:
    """A streams group's member: its tasks as (subtopology id, partitions) in the broker's order."""
    member_id: str
    member_epoch: int
    process_id: str
    client_id: str
    is_classic: bool
    active: list[tuple[str, list[int]]]
    standby: list[tuple[str, list[int]]]
    warmup: list[tuple[str, list[int]]]
    target: tuple[list, list, list]


@dataclass
class Subtopology:
    subtopology_id: str
    source_topics: list[str]
    repartition_sources: list[str]
    changelogs: list[str]


@dataclass
class StreamsGroup:
    group_id: str
    state: str
    group_epoch: int
    assignment_epoch: int
    topology_epoch: int
    subtopologies: list[Subtopology]
    members: list[StreamsMember]


def describe_streams_group(coordinator: Connection, group: str) -> StreamsGroup:
    """StreamsGroupDescribe; KafkaError (the broker's message in ``what``) for a group the
    coordinator does not know as a streams group, as Kafka's admin client fails the describe."""
    cls = REQUESTS[ApiKey.STREAMS_GROUP_DESCRIBE].cls
    answer = coordinator.call(ApiKey.STREAMS_GROUP_DESCRIBE,
                              lambda v: cls(group_ids=(group,), include_authorized_operations=False))
    d = answer.groups[0]
    if d.error_code != ErrorCode.NONE:
        raise KafkaError(d.error_code, d.error_message or "")

    def tasks(ids):
        return [(t.subtopology_id, list(t.partitions)) for t in ids]
    members = [StreamsMember(m.member_id, m.member_epoch, m.process_id, m.client_id, m.is_classic,
                             tasks(m.assignment.active_tasks), tasks(m.assignment.standby_tasks),
                             tasks(m.assignment.warmup_tasks),
                             (tasks(m.target_assignment.active_tasks), tasks(m.target_assignment.standby_tasks),
                              tasks(m.target_assignment.warmup_tasks))) for m in d.members]
    topology = d.topology
    subtopologies = [Subtopology(s.subtopology_id, list(s.source_topics), [t.name for t in s.repartition_source_topics],
                                 [t.name for t in s.state_changelog_topics])
                     for s in (topology.subtopologies or () if topology is not None else ())]
    return StreamsGroup(group, d.group_state, d.group_epoch, d.assignment_epoch,
                        topology.epoch if topology is not None else -1, subtopologies, members)


def delete_topics(cluster: Cluster, topics: list[str]) -> dict[str, tuple[ErrorCode, str | None]]:
    """DeleteTopics by name: each topic's error and message."""
    cls = REQUESTS[ApiKey.DELETE_TOPICS].cls
    answer = cluster.bootstrap.call(ApiKey.DELETE_TOPICS, lambda v: cls(
        topic_names=tuple(topics), timeout_ms=30_000) if v < 6 else cls(
        topics=tuple(cls.DeleteTopicState(name=t, topic_id=ZERO_UUID) for t in topics), timeout_ms=30_000))
    return {r.name: (ErrorCode.lookup(r.error_code), getattr(r, "error_message", None)) for r in answer.responses}
