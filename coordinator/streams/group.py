"""A KIP-1071 streams group (Kafka's StreamsGroup) and its members (StreamsGroupMember).

A streams group changes only by replaying its records (:mod:`coordinator.streams.records`). It
keeps who runs each task now (a process per active task, processes per standby task), which the
reconciliation asks before it hands a task to a new owner, and the soft state Kafka keeps beside
the records: the configured topology, the endpoint information epoch, a requested shutdown.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import Enum, IntEnum
from types import MappingProxyType
from typing import Mapping

from coordinator.consumer.group import members_in_table_order
from coordinator.streams.tasks import EMPTY_TASKS, TasksTuple
from coordinator.streams.topology import ConfiguredTopology, Topology

#: a new streams group's epochs: epoch 1 is its empty assignment (KAFKA-20268)
INITIAL_EPOCH = 1


class StreamsGroupState(Enum):
    EMPTY = "Empty"
    NOT_READY = "NotReady"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


class MemberState(IntEnum):
    """Kafka's streams MemberState, with its record values."""
    STABLE = 1
    UNREVOKED_TASKS = 2
    UNRELEASED_TASKS = 3
    UNKNOWN = 127


@dataclass(frozen=True, slots=True)
class Endpoint:
    host: str
    port: int


@dataclass(frozen=True, slots=True)
class StreamsMember:
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    topology_epoch: int = -1
    process_id: str = ""
    user_endpoint: Endpoint | None = None
    client_tags: tuple[tuple[str, str], ...] = ()       # sorted by key
    assigned: TasksTuple = EMPTY_TASKS
    pending_revocation: TasksTuple = EMPTY_TASKS
    #: (subtopology, partition) -> the epoch an active task was assigned at, for the active
    #: tasks it holds or is revoking (offset commits of an older epoch are checked against it)
    active_epochs: Mapping[tuple[str, int], int] = field(default_factory=lambda: MappingProxyType({}))

    def replace(self, **changes) -> StreamsMember:
        return dataclasses.replace(self, **changes)

    def metadata(self) -> tuple:
        """What its member-metadata record holds (a change bumps the group epoch)."""
        return (self.instance_id, self.rack_id, self.client_id, self.client_host, self.rebalance_timeout_ms,
                self.topology_epoch, self.process_id, self.user_endpoint, self.client_tags)

    def held(self) -> tuple:
        """Its assigned tasks with their active tasks' epochs (what a heartbeat's answer carries
        when it changed)."""
        return self.assigned, {t: e for t, e in self.active_epochs.items()
                               if t[1] in self.assigned.active.get(t[0], ())}

    def is_reconciled_to(self, epoch: int) -> bool:
        return self.state == MemberState.STABLE and self.member_epoch == epoch


class StreamsGroup:
    protocol_type = "streams"
    group_type = "streams"

    def __init__(self, group_id: str):
        self.group_id = group_id
        self.group_epoch = INITIAL_EPOCH
        self.assignment_epoch = INITIAL_EPOCH
        self.assignment_timestamp = 0
        self.metadata_hash = 0
        self.validated_topology_epoch = -1
        self.last_assignment_configs: dict[str, str] = {}
        self.topology: Topology | None = None
        self.members: dict[str, StreamsMember] = {}
        self.members_capacity = 2
        self.target: dict[str, TasksTuple] = {}
        #: who runs each task now: (subtopology, partition) -> process (active), processes
        self.active_owner: dict[tuple[str, int], str] = {}
        self.standby_owners: dict[tuple[str, int], set[str]] = {}
        self.warmup_owners: dict[tuple[str, int], set[str]] = {}
        self.state = StreamsGroupState.EMPTY
        # soft state, as Kafka keeps it outside its records
        self.configured: ConfiguredTopology | None = None
        self.metadata_refresh_deadline = 0
        self.metadata_refresh_epoch = -1
        self.endpoint_information_epoch = 0
        self.shutdown_requester: str | None = None

    @property
    def generation(self) -> int:
        return self.group_epoch

    def is_empty(self) -> bool:
        return not self.members

    def is_in(self, *states) -> bool:
        return any(self.state.value == s.value for s in states)

    def target_of(self, member_id: str) -> TasksTuple:
        return self.target.get(member_id, EMPTY_TASKS)

    def members_in_kafka_order(self) -> list[StreamsMember]:
        return members_in_table_order(self.members, self.members_capacity)

    # --- who runs a task now (the reconciliation's unreleased checks) -------------------------
    def active_unreleased(self, member: StreamsMember, task: tuple[str, int]) -> bool:
        return task in self.active_owner or member.process_id in self.standby_owners.get(task, ()) \
            or member.process_id in self.warmup_owners.get(task, ())

    def standby_unreleased(self, member: StreamsMember, task: tuple[str, int]) -> bool:
        process = member.process_id
        return self.active_owner.get(task) == process or process in self.standby_owners.get(task, ()) \
            or process in self.warmup_owners.get(task, ())

    def _own(self, member: StreamsMember, sign: int) -> None:
        process = member.process_id
        for tasks in (member.assigned, member.pending_revocation):
            for s, ps in tasks.active.items():
                for p in ps:
                    if sign > 0:
                        self.active_owner[(s, p)] = process
                    elif self.active_owner.get((s, p)) == process:
                        del self.active_owner[(s, p)]
            for kind, owners in (("standby", self.standby_owners), ("warmup", self.warmup_owners)):
                for s, ps in getattr(tasks, kind).items():
                    for p in ps:
                        if sign > 0:
                            owners.setdefault((s, p), set()).add(process)
                        elif (s, p) in owners:
                            owners[(s, p)].discard(process)
                            if not owners[(s, p)]:
                                del owners[(s, p)]

    # --- changing (from replay only) ----------------------------------------------------------
    def update_member(self, member: StreamsMember) -> None:
        if (len(self.members) + 1) * 0.75 > self.members_capacity:
            self.members_capacity *= 2
        old = self.members.get(member.member_id)
        if old is not None:
            self._own(old, -1)
        self.members[member.member_id] = member
        self._own(member, 1)
        self.update_state()

    def remove_member(self, member_id: str) -> None:
        old = self.members.pop(member_id, None)
        if old is not None:
            self._own(old, -1)
        self.update_state()

    def update_state(self) -> None:
        """Kafka's maybeUpdateGroupState."""
        S = StreamsGroupState
        if not self.members:
            self.state = S.EMPTY
            self.shutdown_requester = None
        elif self.topology is None or self.topology.epoch != self.validated_topology_epoch:
            self.state = S.NOT_READY
        elif self.group_epoch > self.assignment_epoch:
            self.state = S.ASSIGNING
        elif any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            self.state = S.RECONCILING
        else:
            self.state = S.STABLE

    def request_metadata_refresh(self) -> None:
        self.metadata_refresh_deadline = 0

    def metadata_expired(self, now: int) -> bool:
        return now >= self.metadata_refresh_deadline or self.metadata_refresh_epoch != self.group_epoch

    def is_subscribed(self, topic: str) -> bool:
        """A source or repartition source topic of a live group's topology (OffsetDelete
        refuses to delete its offsets)."""
        return not self.is_empty() and self.topology is not None \
            and self.topology.source_subtopology(topic) is not None

