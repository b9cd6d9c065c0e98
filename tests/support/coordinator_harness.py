"""A small driver for coordinator tests: one real Shard, a fake clock, and the actions it emits.

Nothing is mocked: requests go through ``Shard.handle`` and timers through ``Shard.tick``.
``advance(ms)`` fires every deadline that falls due, in order, each at its own instant, so a
five-minute timeout costs a few function calls.

    h = Harness()
    t = h.join()                      # JoinGroup v9, new dynamic member -> MEMBER_ID_REQUIRED
    member_id = h.replies[t].member_id
    t = h.join(member_id)             # parked: the initial rebalance delay runs
    h.advance(3_000)
    assert h.replies[t].generation_id == 1

``send(api_key, version, request)`` is the generic entry point; the named helpers only build
requests. Every reply lands in ``replies[token]`` (a token answered twice is a test failure);
every Persist's records are appended to ``persisted`` in order; ``actions`` keeps both, in order.
"""

from __future__ import annotations

from itertools import count

from coordinator.actions import Persist, Reply, RequestContext
from coordinator.config import CoordinatorConfig
from coordinator.routing import shard_for
from coordinator.shard import Shard
from protocol import REQUESTS
from protocol.api_keys import ApiKey

JOIN, SYNC, HEARTBEAT, LEAVE, COMMIT = (ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT,
                                        ApiKey.LEAVE_GROUP, ApiKey.OFFSET_COMMIT)

JoinGroupRequest = REQUESTS[JOIN].cls
SyncGroupRequest = REQUESTS[SYNC].cls
HeartbeatRequest = REQUESTS[HEARTBEAT].cls
LeaveGroupRequest = REQUESTS[LEAVE].cls
OffsetCommitRequest = REQUESTS[COMMIT].cls

#: a group-membership protocol list: (name, metadata) pairs in preference order
RANGE = (("range", b"range-meta"),)


def fake_uuids():
    """Deterministic canonical UUID strings: ...-000000000001, ...-000000000002, ..."""
    numbers = count(1)
    return lambda: f"00000000-0000-0000-0000-{next(numbers):012d}"


class Harness:
    def __init__(self, config: CoordinatorConfig | None = None, *, group: str = "g", now: int = 0):
        self.config = config or CoordinatorConfig()
        self.group = group
        self.shard = Shard(shard_for(group, self.config.offsets_topic_num_partitions), self.config,
                           new_uuid=fake_uuids())
        self.now = now
        self.replies: dict[object, object] = {}
        self.persisted: list = []
        self.actions: list = []
        self._tokens = count(1)

    # --- driving ---------------------------------------------------------------------------
    def send(self, api_key: int, version: int, request, token=None, *, client_id: str = "client"):
        """Hand one request to the shard at the current time; returns its token."""
        token = next(self._tokens) if token is None else token
        ctx = RequestContext(token, api_key, version, client_id=client_id)
        self._collect(self.shard.handle(self.now, ctx, request))
        return token

    def advance(self, ms: int) -> None:
        """Move the clock forward, firing each timer at its own deadline, earliest first."""
        end = self.now + ms
        while (deadline := self.shard.next_deadline()) is not None and deadline <= end:
            self.now = max(self.now, deadline)
            self._collect(self.shard.tick(self.now))
        self.now = end

    def _collect(self, result) -> None:
        for action in result.actions:
            self.actions.append(action)
            if isinstance(action, Reply):
                assert action.token not in self.replies, f"token {action.token} answered twice"
                self.replies[action.token] = action.response
            elif isinstance(action, Persist):
                self.persisted.extend(action.records)

    def answered(self, token) -> bool:
        return token in self.replies

    def group_state(self, group: str | None = None):
        return self.shard.groups[group or self.group]

    # --- request builders --------------------------------------------------------------------
    def join(self, member_id: str = "", *, version: int = 9, instance: str | None = None,
             protocols=RANGE, protocol_type: str = "consumer", session: int = 10_000,
             rebalance: int = 60_000, group: str | None = None, client_id: str = "client",
             token=None):
        request = JoinGroupRequest(
            group_id=self.group if group is None else group, session_timeout_ms=session,
            rebalance_timeout_ms=rebalance, member_id=member_id, group_instance_id=instance,
            protocol_type=protocol_type,
            protocols=tuple(JoinGroupRequest.JoinGroupRequestProtocol(name=n, metadata=m)
                            for n, m in protocols))
        return self.send(JOIN, version, request, token, client_id=client_id)

    def sync(self, member_id: str, generation: int, *, version: int = 5,
             assignments: dict[str, bytes] | None = None, instance: str | None = None,
             protocol_type: str | None = "consumer", protocol_name: str | None = "range",
             group: str | None = None, token=None):
        request = SyncGroupRequest(
            group_id=self.group if group is None else group, generation_id=generation,
            member_id=member_id, group_instance_id=instance, protocol_type=protocol_type,
            protocol_name=protocol_name,
            assignments=tuple(SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=a)
                              for m, a in (assignments or {}).items()))
        return self.send(SYNC, version, request, token)

    def heartbeat(self, member_id: str, generation: int, *, version: int = 4,
                  instance: str | None = None, group: str | None = None, token=None):
        request = HeartbeatRequest(group_id=self.group if group is None else group,
                                   generation_id=generation, member_id=member_id,
                                   group_instance_id=instance)
        return self.send(HEARTBEAT, version, request, token)

    def leave(self, *members: str | tuple[str, str | None], version: int = 5,
              group: str | None = None, token=None):
        """v0-2 take one member id; v3+ take member ids or (member id, instance id) pairs."""
        group_id = self.group if group is None else group
        if version < 3:
            request = LeaveGroupRequest(group_id=group_id, member_id=members[0])
        else:
            pairs = [m if isinstance(m, tuple) else (m, None) for m in members]
            request = LeaveGroupRequest(group_id=group_id, members=tuple(
                LeaveGroupRequest.MemberIdentity(member_id=m, group_instance_id=i) for m, i in pairs))
        return self.send(LEAVE, version, request, token)

    def commit(self, member_id: str, generation: int, offsets: dict[tuple[str, int], int] | None = None,
               *, version: int = 9, instance: str | None = None, group: str | None = None,
               token=None):
        topic_cls = OffsetCommitRequest.OffsetCommitRequestTopic
        by_topic: dict[str, list] = {}
        for (topic, partition), offset in (offsets or {("t", 0): 1}).items():
            by_topic.setdefault(topic, []).append(
                topic_cls.OffsetCommitRequestPartition(partition_index=partition, committed_offset=offset))
        request = OffsetCommitRequest(
            group_id=self.group if group is None else group, generation_id_or_member_epoch=generation,
            member_id=member_id, group_instance_id=instance,
            topics=tuple(topic_cls(name=t, partitions=tuple(ps)) for t, ps in by_topic.items()))
        return self.send(COMMIT, version, request, token)

    # --- common sequences ------------------------------------------------------------------
    def new_member(self, **join_args) -> str:
        """KIP-394 first step: a v4+ dynamic join that only hands out a member id."""
        token = self.join(**join_args)
        response = self.replies[token]
        assert response.error_code == 79, response
        return response.member_id

    def stable_group(self, n: int = 1, **join_args) -> tuple[list[str], int]:
        """``n`` dynamic members joined and synced: returns (member ids, leader first; generation)."""
        ids = [self.new_member(**join_args) for _ in range(n)]
        tokens = [self.join(m, **join_args) for m in ids]
        while not all(self.answered(t) for t in tokens):     # late joiners extend the delay
            self.advance(self.config.group_initial_rebalance_delay_ms)
        answers = [self.replies[t] for t in tokens]
        generation, leader = answers[0].generation_id, answers[0].leader
        ids.sort(key=lambda m: m != leader)
        syncs = [self.sync(m, generation, assignments={x: x.encode() for x in ids} if m == leader else None)
                 for m in ids]
        assert all(self.replies[t].error_code == 0 for t in syncs)
        return ids, generation
