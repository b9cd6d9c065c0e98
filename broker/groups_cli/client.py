"""``groupbroker groups``: a kafka-consumer-groups.sh over the Kafka protocol.

Talks to any Kafka broker (ours or Apache Kafka) with a plain blocking socket and our own
codec: ApiVersions picks, per API, the highest version both sides speak, FindCoordinator
locates the group, and the commands print Kafka's columns (REFERENCE.md §7.1).
"""

from __future__ import annotations

import logging
import socket
import struct
import sys
from dataclasses import dataclass, field
from itertools import count

from protocol.errors import ErrorCode
from protocol.exceptions import DecodeError
from protocol.frames import FrameBuffer
from protocol.header import decode_response, encode_request
from protocol.messages import DATA, REQUESTS
from protocol.payloads import decode_payload

log = logging.getLogger(__name__)

API_VERSIONS, METADATA, LIST_OFFSETS, OFFSET_COMMIT, OFFSET_FETCH = 18, 3, 2, 8, 9
FIND_COORDINATOR, DESCRIBE_GROUPS, LIST_GROUPS, DELETE_GROUPS = 10, 15, 16, 42
LATEST, EARLIEST = -1, -2
INACTIVE = {"empty", "dead", ""}
REBALANCING = {"preparingrebalance", "completingrebalance", "assigning", "reconciling"}


class GroupsError(Exception):
    """A failure to report on stderr (exit code 1)."""


class KafkaError(GroupsError):
    """A Kafka error code in a response."""

    def __init__(self, code: int, what: str):
        self.code = ErrorCode.lookup(code)
        super().__init__(f"{what}: {self.code.name}")


def _check(code: int, what: str) -> None:
    if code != ErrorCode.NONE:
        raise KafkaError(code, what)


# --------------------------------------------------------------------------- connection

class Connection:
    """One blocking connection to one broker, with versions negotiated by ApiVersions."""

    def __init__(self, host: str, port: int, client_id: str = "groupbroker-cli", timeout: float = 30.0):
        self.address = f"{host}:{port}"
        try:
            self.sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as e:
            raise GroupsError(f"cannot connect to {self.address}: {e.strerror or e}") from None
        self.client_id = client_id
        self.frames = FrameBuffer()
        self._correlation = count(1)
        self.versions: dict[int, int] = {}
        self._negotiate()

    def close(self) -> None:
        self.sock.close()

    def _roundtrip(self, api_key: int, version: int, body) -> bytes:
        correlation = next(self._correlation)
        try:
            self.sock.sendall(encode_request(api_key, version, correlation, body, self.client_id))
            while (frame := self.frames.next_frame()) is None:
                data = self.sock.recv(1 << 16)
                if not data:
                    raise GroupsError(f"{self.address} closed the connection")
                self.frames.feed(data)
        except OSError as e:
            raise GroupsError(f"connection to {self.address} failed: {e}") from None
        got, = struct.unpack_from(">i", frame, 0)
        if got != correlation:
            raise GroupsError(f"{self.address}: correlation id {got}, expected {correlation}")
        return frame

    def _negotiate(self) -> None:
        """ApiVersions at our highest version; on UNSUPPORTED_VERSION retry at the broker's."""
        ours = REQUESTS[API_VERSIONS]
        version = ours.max_version
        for _ in range(2):
            frame = self._roundtrip(API_VERSIONS, version, _api_versions_body(version))
            error, = struct.unpack_from(">h", frame, 4)
            if error != ErrorCode.UNSUPPORTED_VERSION:
                break
            _, answer = decode_response(API_VERSIONS, 0, frame)
            theirs = {k.api_key: k.max_version for k in answer.api_keys}
            version = min(version, theirs.get(API_VERSIONS, 0))
        _, answer = decode_response(API_VERSIONS, version, frame)
        _check(answer.error_code, "ApiVersions")
        for entry in answer.api_keys:
            mine = REQUESTS.get(entry.api_key)
            if mine is None:
                continue
            top = min(mine.max_version, entry.max_version)
            if top >= max(mine.min_version, entry.min_version):
                self.versions[entry.api_key] = top
        log.debug("negotiated versions with %s: %s", self.address, self.versions)

    def version(self, api_key: int) -> int:
        try:
            return self.versions[api_key]
        except KeyError:
            raise GroupsError(f"{self.address} shares no version of {REQUESTS[api_key].name} "
                              "with this tool") from None

    def call(self, api_key: int, build):
        """Send ``build(version)`` at the negotiated version; the decoded answer."""
        version = self.version(api_key)
        frame = self._roundtrip(api_key, version, build(version))
        try:
            return decode_response(api_key, version, frame)[1]
        except DecodeError as e:
            raise GroupsError(f"bad {REQUESTS[api_key].name} answer from {self.address}: {e}") from None


def _api_versions_body(version: int):
    cls = REQUESTS[API_VERSIONS].cls
    if version >= 3:
        return cls(client_software_name="groupbroker-cli", client_software_version="1")
    return cls()


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
    cls = REQUESTS[METADATA].cls

    def build(v):
        names = None if topics is None else tuple(cls.MetadataRequestTopic(name=t) for t in topics)
        if names is None and v == 0:
            names = ()
        kw = {"allow_auto_topic_creation": False} if v >= 4 else {}
        return cls(topics=names, **kw)
    answer = cluster.bootstrap.call(METADATA, build)
    cluster.brokers = {b.node_id: (b.host, b.port) for b in answer.brokers}
    return answer


def find_coordinator(cluster: Cluster, group: str) -> tuple[int, str, int]:
    """(node id, host, port) of the group's coordinator."""
    cls = REQUESTS[FIND_COORDINATOR].cls

    def build(v):
        if v >= 4:
            return cls(key_type=0, coordinator_keys=(group,))
        return cls(key=group, key_type=0) if v >= 1 else cls(key=group)
    answer = cluster.bootstrap.call(FIND_COORDINATOR, build)
    entry = answer.coordinators[0] if cluster.bootstrap.version(FIND_COORDINATOR) >= 4 else answer
    _check(entry.error_code, f"FindCoordinator for group '{group}'")
    return entry.node_id, entry.host, entry.port


@dataclass
class Member:
    member_id: str
    client_id: str
    host: str
    partitions: list[tuple[str, int]]


@dataclass
class Group:
    group_id: str
    state: str
    protocol: str
    members: list[Member]


def describe_group(coordinator: Connection, group: str) -> Group:
    cls = REQUESTS[DESCRIBE_GROUPS].cls
    answer = coordinator.call(DESCRIBE_GROUPS, lambda v: cls(groups=(group,)))
    described = answer.groups[0]
    if described.error_code == ErrorCode.GROUP_ID_NOT_FOUND:
        return Group(group, "Dead", "", [])
    _check(described.error_code, f"DescribeGroups for group '{group}'")
    members = [Member(m.member_id, m.client_id, m.client_host, _assigned(m.member_assignment))
               for m in described.members]
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


def fetch_offsets(coordinator: Connection, group: str) -> dict[tuple[str, int], int]:
    """Committed offsets of every partition of ``group`` (OffsetFetch with topics = null)."""
    cls = REQUESTS[OFFSET_FETCH].cls
    if coordinator.version(OFFSET_FETCH) < 2:
        raise GroupsError(f"{coordinator.address} cannot fetch all offsets of a group (OffsetFetch < v2)")

    def build(v):
        if v >= 8:
            return cls(groups=(cls.OffsetFetchRequestGroup(group_id=group, topics=None),))
        return cls(group_id=group, topics=None)
    answer = coordinator.call(OFFSET_FETCH, build)
    if coordinator.version(OFFSET_FETCH) >= 8:
        answer = answer.groups[0]
    _check(answer.error_code, f"OffsetFetch for group '{group}'")
    offsets = {}
    for topic in answer.topics:
        for p in topic.partitions:
            _check(p.error_code, f"OffsetFetch for {topic.name}-{p.partition_index}")
            if p.committed_offset >= 0:
                offsets[(topic.name, p.partition_index)] = p.committed_offset
    return offsets


def list_offsets(cluster: Cluster, partitions: list[tuple[str, int]], timestamp: int
                 ) -> dict[tuple[str, int], int]:
    """Offsets at ``timestamp`` (LATEST/EARLIEST), asked of each partition's leader."""
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
    cls = REQUESTS[LIST_OFFSETS].cls
    topics = {}
    for t, p in tps:
        topics.setdefault(t, []).append(cls.ListOffsetsTopic.ListOffsetsPartition(partition_index=p, timestamp=timestamp))

    def build(v):
        body = tuple(cls.ListOffsetsTopic(name=t, partitions=tuple(ps)) for t, ps in topics.items())
        return cls(replica_id=-1, topics=body, **({"isolation_level": 0} if v >= 2 else {}))
    answer = conn.call(LIST_OFFSETS, build)
    return {(t.name, p.partition_index): p.offset for t in answer.topics for p in t.partitions
            if p.error_code == ErrorCode.NONE}


def topic_partitions(cluster: Cluster, topic: str) -> list[tuple[str, int]]:
    meta = metadata(cluster, [topic])
    for t in meta.topics:
        if t.name == topic:
            _check(t.error_code, f"topic '{topic}'")
            return sorted((topic, p.partition_index) for p in t.partitions)
    raise GroupsError(f"topic '{topic}' not found")


# --------------------------------------------------------------------------- output

def table(header: list[str], rows: list[list], widths: list[int]) -> list[str]:
    """Left-aligned, space-separated columns; column i at least ``widths[i]`` wide, last unpadded."""
    cells = [[str(c) for c in row] for row in [header, *rows]]
    sizes = [max([w, *(len(r[i]) for r in cells)]) for i, w in enumerate(widths)]
    return [" ".join(c.ljust(s) for c, s in zip(r, sizes)).rstrip() for r in cells]


def _emit(lines: list[str]) -> None:
    sys.stdout.write("".join(line + "\n" for line in lines))


def _warn(text: str) -> None:
    sys.stderr.write(text + "\n")


# --------------------------------------------------------------------------- commands

def _cluster(args) -> Cluster:
    return Cluster(Connection(*parse_address(args.bootstrap_server)))


def _coordinator(cluster: Cluster, group: str) -> tuple[Connection, str]:
    node, host, port = find_coordinator(cluster, group)
    return cluster.connection(host, port), f"{host}:{port}  ({node})"


def cmd_list(cluster: Cluster, args) -> int:
    """ListGroups on every broker; GROUP (plus STATE with --state)."""
    metadata(cluster, [])
    conns = [cluster.node(n) for n in sorted(cluster.brokers)] or [cluster.bootstrap]
    with_state = args.state is not None
    cls = REQUESTS[LIST_GROUPS].cls
    groups: dict[str, str] = {}
    for conn in conns:
        if with_state and conn.version(LIST_GROUPS) < 4:
            raise GroupsError(f"{conn.address} does not report group states (ListGroups < v4)")
        answer = conn.call(LIST_GROUPS, lambda v: cls())
        _check(answer.error_code, "ListGroups")
        for g in answer.groups:
            groups[g.group_id] = getattr(g, "group_state", "")
    wanted = {s.strip().lower() for s in (args.state or "").split(",") if s.strip()}
    names = sorted(g for g, s in groups.items() if not wanted or s.lower() in wanted)
    if not with_state:
        _emit(names)
        return 0
    _emit(table(["GROUP", "STATE"], [[g, groups[g]] for g in names], [15, 0]))
    return 0


def _group_known(group: Group) -> bool:
    """False (after the message) when the group does not exist; warns on Empty / rebalancing."""
    state = group.state.lower()
    if state in ("dead", ""):
        _warn(f"Error: Consumer group '{group.group_id}' does not exist.")
        return False
    if state == "empty":
        _warn(f"Consumer group '{group.group_id}' has no active members.")
    elif state in REBALANCING:
        _warn(f"Warning: Consumer group '{group.group_id}' is rebalancing.")
    return True


def cmd_describe(cluster: Cluster, args) -> int:
    coordinator, label = _coordinator(cluster, args.group)
    group = describe_group(coordinator, args.group)
    if args.state_view:
        if not _group_known(group):
            return 1
        row = [group.group_id, label, group.protocol, group.state, len(group.members)]
        _emit(table(["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"],
                    [row], [15, 25, 25, 20, 0]))
        return 0
    if args.members:
        if not _group_known(group):
            return 1
        rows = [[group.group_id, m.member_id, m.host, m.client_id, len(m.partitions)]
                for m in sorted(group.members, key=lambda m: m.member_id)]
        if rows:
            _emit(table(["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"],
                        rows, [15, 15, 15, 15, 0]))
        return 0
    return _describe_offsets(cluster, coordinator, group)


def _describe_offsets(cluster: Cluster, coordinator: Connection, group: Group) -> int:
    committed = fetch_offsets(coordinator, group.group_id)
    if group.state.lower() == "dead" and committed:
        group.state = "Empty"          # offsets but no group metadata: Kafka shows them as Empty
    if not _group_known(group):
        return 1
    owner = {tp: m for m in group.members for tp in m.partitions}
    partitions = sorted(set(committed) | set(owner))
    end = list_offsets(cluster, partitions, LATEST)
    rows = []
    for tp in partitions:
        m = owner.get(tp)
        cur, last = committed.get(tp), end.get(tp)
        lag = last - cur if cur is not None and last is not None else None
        rows.append([group.group_id, tp[0], tp[1], _dash(cur), _dash(last), _dash(lag),
                     *((m.member_id, m.host, m.client_id) if m else ("-", "-", "-"))])
    for m in sorted(group.members, key=lambda m: m.member_id):
        if not m.partitions:
            rows.append([group.group_id, "-", "-", "-", "-", "-", m.member_id, m.host, m.client_id])
    if rows:
        _emit(table(["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                     "CONSUMER-ID", "HOST", "CLIENT-ID"], rows, [15, 15, 10, 15, 15, 15, 15, 15, 0]))
    return 0


def _dash(value) -> str:
    return "-" if value is None else str(value)


def cmd_delete(cluster: Cluster, args) -> int:
    coordinator, _ = _coordinator(cluster, args.group)
    cls = REQUESTS[DELETE_GROUPS].cls
    answer = coordinator.call(DELETE_GROUPS, lambda v: cls(groups_names=(args.group,)))
    code = ErrorCode.lookup(answer.results[0].error_code)
    if code != ErrorCode.NONE:
        _warn("Error: Deletion of some consumer groups failed:")
        _warn(f"* Group '{args.group}' could not be deleted due to: {code.name}")
        return 1
    _emit([f"Deletion of requested consumer groups ('{args.group}') was successful."])
    return 0


def cmd_reset_offsets(cluster: Cluster, args) -> int:
    coordinator, _ = _coordinator(cluster, args.group)
    group = describe_group(coordinator, args.group)
    if group.state.lower() not in INACTIVE:
        raise GroupsError(f"Assignments can only be reset if the group '{args.group}' is inactive, "
                          f"but the current state is {group.state}.")
    partitions = topic_partitions(cluster, args.topic)
    targets = _reset_targets(cluster, partitions, args)
    if args.execute:
        _commit(coordinator, args.group, targets)
    elif not args.dry_run:                  # Kafka's tool: without --execute it only plans
        _warn("WARN: No action will be performed as the --execute option is missing "
              "(add --execute to reset the offsets, or --dry-run to only print them).")
    rows = [[args.group, t, p, off] for (t, p), off in sorted(targets.items())]
    _emit(table(["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"], rows, [30, 30, 10, 0]))
    return 0


def _reset_targets(cluster: Cluster, partitions, args) -> dict[tuple[str, int], int]:
    if args.to_offset is None:
        found = list_offsets(cluster, partitions, EARLIEST if args.to_earliest else LATEST)
        missing = [tp for tp in partitions if tp not in found]
        if missing:
            raise GroupsError(f"no offsets for {', '.join(f'{t}-{p}' for t, p in missing)}")
        return found
    # Kafka clamps --to-offset into [earliest, latest]
    low = list_offsets(cluster, partitions, EARLIEST)
    high = list_offsets(cluster, partitions, LATEST)
    return {tp: min(max(args.to_offset, low.get(tp, 0)), high.get(tp, args.to_offset))
            for tp in partitions}


def _commit(coordinator: Connection, group: str, targets: dict[tuple[str, int], int]) -> None:
    cls = REQUESTS[OFFSET_COMMIT].cls
    by_topic: dict[str, list] = {}
    for (t, p), off in sorted(targets.items()):
        by_topic.setdefault(t, []).append(cls.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
            partition_index=p, committed_offset=off, committed_metadata=""))

    def build(v):
        kw = {"group_instance_id": None} if v >= 7 else {}
        topics = tuple(cls.OffsetCommitRequestTopic(name=t, partitions=tuple(ps))
                       for t, ps in by_topic.items())
        return cls(group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=topics, **kw)
    answer = coordinator.call(OFFSET_COMMIT, build)
    for topic in answer.topics:
        for p in topic.partitions:
            _check(p.error_code, f"OffsetCommit for {topic.name}-{p.partition_index}")


COMMANDS = {"list": cmd_list, "describe": cmd_describe, "delete": cmd_delete,
            "reset-offsets": cmd_reset_offsets}


def add_parser(commands) -> None:
    """The ``groups`` subcommand and its own subcommands, under ``commands``."""
    groups = commands.add_parser("groups", help="list, describe, delete consumer groups and reset "
                                 "their offsets (like kafka-consumer-groups.sh), over the wire")
    groups.add_argument("--bootstrap-server", default="127.0.0.1:9092", metavar="HOST:PORT")
    sub = groups.add_subparsers(dest="groups_command", required=True)
    lst = sub.add_parser("list", help="list the groups")
    lst.add_argument("--state", nargs="?", const="", metavar="S",
                     help="show the STATE column; with S (comma-separated), only groups in those states")
    desc = sub.add_parser("describe", help="offsets, members or state of a group")
    desc.add_argument("group")
    view = desc.add_mutually_exclusive_group()
    view.add_argument("--members", action="store_true", help="one line per member")
    view.add_argument("--state", dest="state_view", action="store_true", help="the group's state")
    delete = sub.add_parser("delete", help="delete an empty group and its offsets")
    delete.add_argument("group")
    reset = sub.add_parser("reset-offsets", help="reset the committed offsets of an inactive group")
    reset.add_argument("group")
    reset.add_argument("--topic", required=True)
    to = reset.add_mutually_exclusive_group(required=True)
    to.add_argument("--to-earliest", action="store_true")
    to.add_argument("--to-latest", action="store_true")
    to.add_argument("--to-offset", type=int, metavar="N")
    mode = reset.add_mutually_exclusive_group()
    mode.add_argument("--execute", action="store_true", help="commit the new offsets")
    mode.add_argument("--dry-run", action="store_true",
                      help="print the new offsets, commit nothing (also the default, with a warning)")


def run(args) -> int:
    """Run one ``groups`` command; errors go to stderr with exit code 1."""
    try:
        cluster = _cluster(args)
    except GroupsError as e:
        _warn(f"Error: {e}")
        return 1
    try:
        return COMMANDS[args.groups_command](cluster, args)
    except GroupsError as e:
        _warn(f"Error: {e}")
        return 1
    finally:
        cluster.close()
