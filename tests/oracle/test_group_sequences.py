"""Random sequences of classic group operations, the same against groupbroker and Apache Kafka.

Each sequence is drawn from its own seed: two members (each on its own connection to each broker)
join with random versions, member ids, instance ids and protocols, sync with current and stale
generations, heartbeat, leave, commit and fetch offsets, and the group is described and deleted.
Every answer is compared field by field. A JoinGroup or SyncGroup may park until the other
member acts; a request neither broker answers within ``QUIET_S`` is parked on both and compared
once they answer it. One broker answering and the other not within ``GRACE_S`` is a difference.

Nothing here depends on timers: sessions and rebalance timeouts are 60 s, longer than a sequence,
and the initial rebalance delay is 0 on both brokers. Two members at most, and a member joins
without an id only while it holds none, so no choice of a new leader ever depends on the order
of random member ids in a hash table (a leader Kafka picks from its HashMap of members).

``GROUPBROKER_ORACLE_SEQUENCES`` (default 200) sequences run; ``GROUPBROKER_ORACLE_SEED`` replays
one seed (the failure message names it); ``make fuzz-oracle`` runs many more.
"""

from __future__ import annotations

import dataclasses
import os
import random

import pytest
import trio

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from tests.oracle.steps import create_topic, join_body, req, sub
from tests.support.differential import Alias, Differential, Differs, Side

SEQUENCES = int(os.environ.get("GROUPBROKER_ORACLE_SEQUENCES", "200"))
SEED = os.environ.get("GROUPBROKER_ORACLE_SEED")
STEPS = (6, 14)
QUIET_S = 0.3            # no answer from either within this: parked on both
GRACE_S = 5.0            # one answered: the other must within this
CONCURRENT = 4           # sequences at once (they share nothing but the brokers)
TOPIC = "oracle-sequences"
PROTOCOL_SETS = (("range",), ("range", "roundrobin"), ("roundrobin", "range"))
#: member lists whose order follows each broker's hash of its own random member ids
UNORDERED = ("members",)


@dataclasses.dataclass
class Member:
    slot: int
    pair: Differential
    member: Alias | None = None
    generation: int = -1
    leader: bool = False
    protocol: str | None = None
    peers: tuple = ()
    instance: str | None = None
    pending: tuple | None = None            # (what, api key, version) of a parked request


class Sequence:
    def __init__(self, seed: int, members: list[Member], spare: Differential, group: str):
        self.rng, self.members, self.spare, self.group = random.Random(seed), members, spare, group
        self.seed, self.log = seed, []

    def fail(self, error: Exception):
        steps = "\n  ".join(self.log)
        raise Differs(f"sequence seed {self.seed} (replay: GROUPBROKER_ORACLE_SEED={self.seed}):\n  "
                      f"{steps}\n{error}") from None

    async def run(self) -> None:
        try:
            for _ in range(self.rng.randint(*STEPS)):
                idle = [m for m in self.members if m.pending is None]
                op = self.rng.choice(["join", "join", "sync", "heartbeat", "leave", "commit", "fetch",
                                      "describe", "delete"])
                if op in ("join", "sync", "heartbeat", "leave", "commit") and not idle:
                    op = "describe"
                await getattr(self, op)(self.rng.choice(idle or self.members))
                await self.collect(QUIET_S / 6)
            await self.collect(QUIET_S)
        except Differs as e:
            self.fail(e)

    # --- sending and comparing --------------------------------------------------------------
    async def send(self, m: Member, what: str, api: ApiKey, version: int, body) -> dict | None:
        """Send on ``m``'s connections; the compared answer, or None while parked on both."""
        self.log.append(f"member {m.slot}: {what} ({api.name} v{version})")
        for side in m.pair.sides:
            await side.client.send(api, version, side.resolve(body))
        m.pending = (what, api, version)
        return await self.settle(m, QUIET_S)

    async def settle(self, m: Member, quiet: float) -> dict | None:
        what, api, version = m.pending
        answers = [None, None]

        async def receive(i: int, side: Side, wait: float) -> None:
            with trio.move_on_after(wait):
                answers[i] = (await side.client.receive())[1]
        async with trio.open_nursery() as nursery:
            for i, side in enumerate(m.pair.sides):
                nursery.start_soon(receive, i, side, quiet)
        if answers == [None, None]:
            return None
        for i, side in enumerate(m.pair.sides):
            if answers[i] is None:
                await receive(i, side, GRACE_S)
                if answers[i] is None:
                    raise Differs(f"{what}: {m.pair.sides[1 - i].name} answered {answers[1 - i]}, "
                                  f"{side.name} did not within {GRACE_S} s")
        m.pending = None
        if api == ApiKey.JOIN_GROUP:          # alias the member's own id before its peers' lists
            for side, answer in zip(m.pair.sides, answers):
                side.normalise(answer.member_id, "member_id")
        answer = m.pair.compare(api, version, answers[0], answers[1], what=what, unordered=UNORDERED)
        self.learn(m, api, answer)
        return answer

    async def collect(self, quiet: float) -> None:
        for m in self.members:
            if m.pending is not None:
                await self.settle(m, quiet)

    def learn(self, m: Member, api: ApiKey, answer: dict) -> None:
        error = answer.get("error_code")
        if api == ApiKey.JOIN_GROUP:
            if answer["member_id"]:
                m.member = Alias(answer["member_id"])
            if error == ErrorCode.NONE:
                m.generation, m.protocol = answer["generation_id"], answer["protocol_name"]
                m.leader = answer["leader"] == answer["member_id"]
                m.peers = tuple(Alias(p["member_id"]) for p in answer["members"])
        elif api == ApiKey.LEAVE_GROUP and error == ErrorCode.NONE:
            m.member, m.generation, m.leader = None, -1, False

    def generation(self, m: Member) -> int:
        return self.rng.choice([m.generation, m.generation, m.generation + 1, -1])

    # --- operations -------------------------------------------------------------------------
    async def join(self, m: Member) -> None:
        version = self.rng.randrange(10)
        if version >= 5 and m.instance is None and self.rng.random() < 0.3:
            m.instance = f"instance-{m.slot}"
        member = m.member if m.member is not None else ""
        await self.send(m, f"join as {member or 'new'}", ApiKey.JOIN_GROUP, version, join_body(
            self.group, member, instance_id=m.instance if version >= 5 else None,
            protocols=self.rng.choice(PROTOCOL_SETS), session_timeout_ms=60000, rebalance_timeout_ms=60000))

    async def sync(self, m: Member) -> None:
        version = self.rng.randrange(6)
        assignments = tuple(sub(ApiKey.SYNC_GROUP, "SyncGroupRequestAssignment", member_id=p, assignment=b"a")
                            for p in m.peers) if m.leader else ()
        await self.send(m, "sync", ApiKey.SYNC_GROUP, version, req(
            ApiKey.SYNC_GROUP, group_id=self.group, generation_id=self.generation(m),
            member_id=m.member or "nobody", group_instance_id=m.instance if version >= 3 else None,
            protocol_type="consumer", protocol_name=m.protocol or "range", assignments=assignments))

    async def heartbeat(self, m: Member) -> None:
        version = self.rng.randrange(5)
        await self.send(m, "heartbeat", ApiKey.HEARTBEAT, version, req(
            ApiKey.HEARTBEAT, group_id=self.group, generation_id=self.generation(m),
            member_id=m.member or "nobody", group_instance_id=m.instance if version >= 3 else None))

    async def leave(self, m: Member) -> None:
        version = self.rng.randrange(6)
        if version < 3:
            body = req(ApiKey.LEAVE_GROUP, group_id=self.group, member_id=m.member or "nobody")
        else:
            body = req(ApiKey.LEAVE_GROUP, group_id=self.group, members=(sub(
                ApiKey.LEAVE_GROUP, "MemberIdentity", member_id="" if m.instance and self.rng.random() < 0.5
                else (m.member or "nobody"), group_instance_id=m.instance),))
        await self.send(m, "leave", ApiKey.LEAVE_GROUP, version, body)

    async def commit(self, m: Member) -> None:
        version = self.rng.randrange(2, 10)
        await self.send(m, "commit", ApiKey.OFFSET_COMMIT, version, req(
            ApiKey.OFFSET_COMMIT, group_id=self.group, generation_id_or_member_epoch=self.generation(m),
            member_id=m.member or "", group_instance_id=m.instance if version >= 7 else None, topics=(
                sub(ApiKey.OFFSET_COMMIT, "OffsetCommitRequestTopic", name=TOPIC, partitions=(
                    sub(ApiKey.OFFSET_COMMIT, "OffsetCommitRequestPartition", partition_index=self.rng.randrange(2),
                        committed_offset=self.rng.randrange(100), committed_metadata=""),)),)))

    async def fetch(self, m: Member) -> None:
        version = self.rng.randrange(1, 10)
        if version < 8:
            body = req(ApiKey.OFFSET_FETCH, group_id=self.group, topics=(
                sub(ApiKey.OFFSET_FETCH, "OffsetFetchRequestTopic", name=TOPIC, partition_indexes=(0, 1)),))
        else:
            body = req(ApiKey.OFFSET_FETCH, groups=(sub(ApiKey.OFFSET_FETCH, "OffsetFetchRequestGroup",
                       group_id=self.group, topics=(sub(ApiKey.OFFSET_FETCH, "OffsetFetchRequestTopics", name=TOPIC,
                                                        partition_indexes=(0, 1)),)),))
        await self.ask(m, "fetch", ApiKey.OFFSET_FETCH, version, body)

    async def describe(self, m: Member) -> None:
        version = self.rng.randrange(7)
        await self.ask(m, "describe", ApiKey.DESCRIBE_GROUPS, version, req(
            ApiKey.DESCRIBE_GROUPS, groups=(self.group,), include_authorized_operations=version >= 3))

    async def delete(self, m: Member) -> None:
        await self.ask(m, "delete", ApiKey.DELETE_GROUPS, self.rng.randrange(3),
                       req(ApiKey.DELETE_GROUPS, groups_names=(self.group,)))

    async def ask(self, m: Member, what: str, api: ApiKey, version: int, body) -> None:
        """A request that never parks, on a connection of its own (a member's may have one parked)."""
        self.log.append(f"{what} ({api.name} v{version})")
        await self.spare.call(api, version, body, what=what, unordered=UNORDERED)


async def run_sequence(seed: int, ours_port: int, kafka_port: int) -> None:
    pairs = [await Differential.open(ours_port, kafka_port, client_id=f"member-{i}") for i in range(3)]
    for pair in pairs[1:]:                   # one table of aliases per broker for the sequence
        for mine, first in zip(pair.sides, pairs[0].sides):
            mine.by_value, mine.by_alias = first.by_value, first.by_alias
    members = [Member(i, pair) for i, pair in enumerate(pairs[:2])]
    sequence = Sequence(seed, members, pairs[2], group=f"oracle-sequence-{seed}")
    try:
        await sequence.run()
    finally:
        for pair in pairs:
            await pair.aclose()


@pytest.fixture
async def sequence_topic(oracle):
    ours, kafka = await oracle.both(ApiKey.METADATA, 12, req(ApiKey.METADATA, topics=(
        sub(ApiKey.METADATA, "MetadataRequestTopic", name=TOPIC),), allow_auto_topic_creation=False))
    if kafka.topics[0].error_code != ErrorCode.NONE or ours.topics[0].error_code != ErrorCode.NONE:
        await create_topic(oracle, TOPIC, 2)


async def test_random_group_sequences_agree(kafka_oracle, oracle_twin, sequence_topic):
    seeds = [int(SEED)] if SEED else [random.randrange(1 << 32) for _ in range(SEQUENCES)]
    failures = []
    limit = trio.CapacityLimiter(CONCURRENT)

    async def one(seed: int) -> None:
        async with limit:
            try:
                await run_sequence(seed, oracle_twin.port, kafka_oracle.port)
            except Differs as e:
                failures.append(str(e))
    async with trio.open_nursery() as nursery:
        for seed in seeds:
            nursery.start_soon(one, seed)
    assert not failures, f"{len(failures)} of {len(seeds)} sequences differ; the first:\n{failures[0]}"
