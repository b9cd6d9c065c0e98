"""ConsumerGroupHeartbeat (KIP-848) against Apache Kafka's group coordinator: every error path
with Kafka's code and message, leaving (-1) and static temporary leaving (-2), and the timers.

The arbiter is Kafka 4.3.1 (a group starts at epoch 1, so its first assignment is epoch 2; a
member may rejoin with epoch 0): request validation in GroupCoordinatorService.
throwIfConsumerGroupHeartbeatRequestIsInvalid (MemberId, GroupId, InstanceId, RackId, then the
epoch checks, then ServerAssignor), the rest in GroupMetadataManager (consumerGroupHeartbeat,
consumerGroupLeave, the throwIf... checks, the session and rebalance timers). The expected
answers follow GroupMetadataManagerTest (testConsumerHeartbeatRequestValidation,
testConsumerGroupMemberEpochValidation[ForStaticMember], testShouldThrow..., testSession...,
testRebalanceTimeoutExpiration, testStaticMemberGetsBackAssignmentUponRejoin, ...).
A case where we answer otherwise than Kafka is kept and marked xfail(strict) with Kafka's answer.
"""

from __future__ import annotations

import dataclasses

import pytest

from coordinator.config import CoordinatorConfig
from coordinator.consumer import records as rec
from coordinator.consumer.member import ConsumerGroupMember, MemberState
from offsets_log.records import GroupRecord, GroupMetadataTombstone
from protocol.errors import ErrorCode as E

from tests.support.consumer_harness import (CURRENT, GROUP_EPOCH, MEMBER, PARTITION_METADATA,
                                            TARGET_EPOCH, TARGET_MEMBER, ConsumerHarness,
                                            HeartbeatRequest, group_on_shard, owned, owned_names,
                                            parts, record_kinds, response_assignment, topic_id)

G = "g"
FOO = topic_id("foo")


def config(**overrides) -> CoordinatorConfig:
    return dataclasses.replace(CoordinatorConfig(), **overrides)


def greater(received: int, known: int) -> str:
    return (f"The consumer group member has a greater member epoch ({received}) than the one known "
            f"by the group coordinator ({known}). The member must abandon all its partitions and "
            "rejoin.")


def smaller(received: int, known: int) -> str:
    return (f"The consumer group member has a smaller member epoch ({received}) than the one known "
            f"by the group coordinator ({known}). The member must abandon all its partitions and "
            "rejoin.")


def xfail(reason: str):
    return pytest.mark.xfail(strict=True, reason=reason)


PARAM = type(pytest.param())


def cases(table, arity: int):
    """pytest params from (id, *values) rows; rows already pytest.param pass through."""
    out = []
    for row in table:
        if isinstance(row, PARAM):
            out.append(row)
        else:
            name, *values = row
            out.append(pytest.param(*values, *[None] * (arity - len(values)), id=name))
    return out


# --- 1. request validation (GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid)

JOIN = dict(group_id=G, member_id="m1", member_epoch=0, rebalance_timeout_ms=300_000,
            subscribed_topic_names=("foo",), topic_partitions=())
UNSUPPORTED = "ServerAssignor bar is not supported. Supported assignors: uniform, range."
NO_SUBSCRIPTION = ("Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when "
                   "(re-)joining.")

# (id, version, request fields over JOIN, code, message[, marks])
VALIDATION = [
    ("v1 join without member id", 1, dict(member_id=""), E.INVALID_REQUEST, "MemberId can't be empty."),
    ("v1 join with a blank member id", 1, dict(member_id="   "), E.INVALID_REQUEST,
     "MemberId can't be empty."),
    ("v0 heartbeat without member id", 0, dict(member_id="", member_epoch=1), E.INVALID_REQUEST,
     "MemberId can't be empty."),
    ("v0 leave without member id", 0, dict(member_id="", member_epoch=-1), E.INVALID_REQUEST,
     "MemberId can't be empty."),
    ("v1 static leave without member id", 1, dict(member_id="", member_epoch=-2, instance_id="i"),
     E.INVALID_REQUEST, "MemberId can't be empty."),
    ("member id is checked before group id", 1, dict(member_id="", group_id=""), E.INVALID_REQUEST,
     "MemberId can't be empty."),
    ("empty group id", 1, dict(group_id=""), E.INVALID_REQUEST, "GroupId can't be empty."),
    ("blank group id", 1, dict(group_id="   "), E.INVALID_REQUEST, "GroupId can't be empty."),
    ("v0 join may omit the member id, not the group id", 0, dict(member_id="", group_id=""),
     E.INVALID_REQUEST, "GroupId can't be empty."),
    ("empty instance id", 1, dict(instance_id=""), E.INVALID_REQUEST, "InstanceId can't be empty."),
    ("group id is checked before instance id", 1, dict(group_id="", instance_id=""),
     E.INVALID_REQUEST, "GroupId can't be empty."),
    ("empty instance id on a heartbeat", 1, dict(member_epoch=1, instance_id=""), E.INVALID_REQUEST,
     "InstanceId can't be empty."),
    ("empty rack id", 1, dict(rack_id=""), E.INVALID_REQUEST, "RackId can't be empty."),
    ("instance id is checked before rack id", 1, dict(instance_id="", rack_id=""),
     E.INVALID_REQUEST, "InstanceId can't be empty."),
    ("empty rack id on a heartbeat", 1, dict(member_epoch=1, rack_id=""), E.INVALID_REQUEST,
     "RackId can't be empty."),
    ("join without a rebalance timeout", 1, dict(rebalance_timeout_ms=-1), E.INVALID_REQUEST,
     "RebalanceTimeoutMs must be provided in first request."),
    ("rack id is checked before the epoch checks", 1, dict(rack_id="", rebalance_timeout_ms=-1),
     E.INVALID_REQUEST, "RackId can't be empty."),
    ("join without owned partitions (null)", 1, dict(topic_partitions=None), E.INVALID_REQUEST,
     "TopicPartitions must be empty when (re-)joining."),
    ("join owning partitions", 1, dict(topic_partitions=owned_names(foo=[0])), E.INVALID_REQUEST,
     "TopicPartitions must be empty when (re-)joining."),
    ("join owning an empty partition list", 1, dict(topic_partitions=owned_names(foo=[])),
     E.INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining."),
    ("join without names nor regex", 1, dict(subscribed_topic_names=None), E.INVALID_REQUEST,
     NO_SUBSCRIPTION),
    ("v0 join without names", 0, dict(subscribed_topic_names=None), E.INVALID_REQUEST,
     NO_SUBSCRIPTION),
    ("static leave without instance id", 1, dict(member_epoch=-2), E.INVALID_REQUEST,
     "InstanceId can't be null."),
    ("epoch -3", 1, dict(member_epoch=-3), E.INVALID_REQUEST, "MemberEpoch is invalid."),
    ("epoch int32 min", 1, dict(member_epoch=-2**31), E.INVALID_REQUEST, "MemberEpoch is invalid."),
    ("unsupported assignor on join", 1, dict(server_assignor="bar"), E.UNSUPPORTED_ASSIGNOR,
     UNSUPPORTED),
    ("unsupported assignor on heartbeat", 1, dict(member_epoch=1, server_assignor="bar"),
     E.UNSUPPORTED_ASSIGNOR, UNSUPPORTED),
    ("assignor names are case-sensitive", 1, dict(server_assignor="Range"), E.UNSUPPORTED_ASSIGNOR,
     "ServerAssignor Range is not supported. Supported assignors: uniform, range."),
    ("the epoch checks come before the assignor", 1,
     dict(server_assignor="bar", rebalance_timeout_ms=-1), E.INVALID_REQUEST,
     "RebalanceTimeoutMs must be provided in first request."),
    ("unknown assignor on a leave", 1, dict(member_epoch=-1, server_assignor="bar"),
     E.UNSUPPORTED_ASSIGNOR, UNSUPPORTED),
    # Java's String.trim() strips the code points <= U+0020 (controls included) and nothing else;
    # Python's str.strip() strips Unicode white space.
    pytest.param(1, dict(rack_id="\u00a0"), E.NONE, None, id="NBSP rack id is not blank to Java"),
    pytest.param(1, dict(rack_id="\x00"), E.INVALID_REQUEST, "RackId can't be empty.",
                 id="NUL rack id is blank to Java"),
]


@pytest.mark.parametrize("version,fields,code,message", cases(VALIDATION, 4))
def test_request_validation(version, fields, code, message):
    h = ConsumerHarness(topics={"foo": 2})
    response = h.send_hb(HeartbeatRequest(**{**JOIN, **fields}), version=version)
    assert (response.error_code, response.error_message) == (code, message)
    if code != E.NONE:
        assert (response.member_id, response.member_epoch, response.heartbeat_interval_ms,
                response.assignment) == (None, 0, 0, None)
        assert h.persisted == []


def test_unsupported_assignor_lists_the_configured_assignors():
    h = ConsumerHarness(config(group_consumer_assignors="range"))
    response = h.send_hb(h.request("m1", 0, topics=["foo"], assignor="uniform"))
    assert (response.error_code, response.error_message) == (
        E.UNSUPPORTED_ASSIGNOR, "ServerAssignor uniform is not supported. Supported assignors: range.")


@pytest.mark.parametrize("fields", [
    pytest.param(dict(subscribed_topic_names=()), id="empty names list"),
    pytest.param(dict(subscribed_topic_names=None, subscribed_topic_regex="fo.*"), id="regex only"),
    pytest.param(dict(server_assignor="range"), id="a supported assignor"),
    pytest.param(dict(rack_id="r1", instance_id="i1"), id="rack and instance"),
])
def test_valid_joins_are_accepted(fields):
    h = ConsumerHarness(topics={"foo": 2})
    response = h.send_hb(HeartbeatRequest(**{**JOIN, **fields}))
    assert response.error_code == E.NONE and response.member_id == "m1"


def test_v0_join_without_member_id_gets_one_generated():
    """testMemberIdGeneration: the coordinator makes the id of a v0 member."""
    h = ConsumerHarness(topics={"foo": 2})
    response = h.hb("", 0, version=0, topics=["foo"], assignor="range")
    assert response.error_code == E.NONE and response.member_id
    assert response.member_epoch == 2 and response.member_id in h.cgroup().members


def test_a_new_group_starts_at_epoch_1():
    """Kafka 4.3 (KAFKA-20268): a group starts at group epoch 1 with an empty assignment at
    epoch 1; a first member with no topics changes nothing and reconciles to epoch 1, one that
    subscribes bumps the group to epoch 2 and gets the first computed assignment."""
    h = ConsumerHarness(topics={"foo": 2})
    response = h.hb("m1", 0, topics=[])
    assert (response.error_code, response.member_epoch) == (E.NONE, 1)
    assert (h.cgroup().group_epoch, h.cgroup().assignment_epoch) == (1, 1)
    assert [r.type for r in h.records()] == [MEMBER, CURRENT]
    response = h.hb("m1", 1, topics=["foo"])
    assert (response.member_epoch, h.cgroup().group_epoch, h.cgroup().assignment_epoch) == (2, 2, 2)


# --- 2. group and member lookups, epochs, instance ids, size --------------------------------

@dataclasses.dataclass
class Populated:
    """Group g on topic foo (6 partitions): dynamic m1 and static m2 (instance i2), both Stable
    at epoch 3. m1 came from epoch 2 (previous epoch 2); m2 joined at epoch 3."""
    h: ConsumerHarness
    other: str            # a group id on the same shard that does not exist
    a1: dict              # m1's partitions
    a2: dict              # m2's partitions


def populate(cfg: CoordinatorConfig | None = None) -> Populated:
    h = ConsumerHarness(cfg, topics={"foo": 6})
    assert h.hb("m1", 0, topics=["foo"]).member_epoch == 2
    assert h.hb("m2", 0, topics=["foo"], instance="i2").member_epoch == 3
    h.hb("m1", 2, owned=h.owned_by("m1"))                       # revoking
    assert h.member("m1").state == MemberState.UNREVOKED_PARTITIONS
    assert h.hb("m1", 2, owned=owned(h.member("m1").assigned)).member_epoch == 3
    assert h.hb("m2", 3, instance="i2", owned=()).member_epoch == 3
    m1, m2 = h.member("m1"), h.member("m2")
    assert (m1.member_epoch, m1.previous_member_epoch, m1.state) == (3, 2, MemberState.STABLE)
    assert (m2.member_epoch, m2.previous_member_epoch, m2.state) == (3, 3, MemberState.STABLE)
    return Populated(h, group_on_shard(h.shard.shard_id, "absent"), dict(m1.assigned),
                     dict(m2.assigned))


def _all_of(p: Populated) -> dict:
    return {FOO: frozenset(range(6))}


# Each case: request fields (a value may be a function of the Populated state), then the code and
# message (formatted with the Populated state's ``other``), and the expected epoch when accepted.
LOOKUPS: list = [
    # GROUP_ID_NOT_FOUND (getOrMaybeCreateConsumerGroup / group)
    ("heartbeat to an unknown group", dict(group="{other}", member_id="m1", epoch=2),
     E.GROUP_ID_NOT_FOUND, "Consumer group {other} not found."),
    ("static heartbeat to an unknown group", dict(group="{other}", member_id="m2", epoch=2, instance="i2"),
     E.GROUP_ID_NOT_FOUND, "Consumer group {other} not found."),
    pytest.param(dict(group="{other}", member_id="m1", epoch=-1), E.GROUP_ID_NOT_FOUND,
                 "Group {other} not found.", None, id="leave of an unknown group"),
    pytest.param(dict(group="{other}", member_id="m2", epoch=-2, instance="i2"),
                 E.GROUP_ID_NOT_FOUND, "Group {other} not found.", None,
                 id="static leave of an unknown group"),
    # UNKNOWN_MEMBER_ID
    ("unknown dynamic member", dict(member_id="m9", epoch=3), E.UNKNOWN_MEMBER_ID,
     "Member m9 is not a member of group g."),
    ("unknown dynamic member at its previous epoch", dict(member_id="m9", epoch=2, owned=()),
     E.UNKNOWN_MEMBER_ID, "Member m9 is not a member of group g."),
    ("unknown dynamic member leaving", dict(member_id="m9", epoch=-1), E.UNKNOWN_MEMBER_ID,
     "Member m9 is not a member of group g."),
    ("unknown static member", dict(member_id="m9", epoch=3, instance="i9"), E.UNKNOWN_MEMBER_ID,
     "Instance id i9 is unknown."),
    ("known member id with an unknown instance", dict(member_id="m1", epoch=3, instance="i9"),
     E.UNKNOWN_MEMBER_ID, "Instance id i9 is unknown."),
    ("unknown static member leaving temporarily", dict(member_id="m9", epoch=-2, instance="i9"),
     E.UNKNOWN_MEMBER_ID, "Instance id i9 is unknown."),
    ("unknown static member leaving", dict(member_id="m9", epoch=-1, instance="i9"),
     E.UNKNOWN_MEMBER_ID, "Instance id i9 is unknown."),
    # FENCED_INSTANCE_ID / UNRELEASED_INSTANCE_ID
    ("instance held by another member id", dict(member_id="mX", epoch=3, instance="i2"),
     E.FENCED_INSTANCE_ID, "Static member mX with instance id i2 was fenced by member m2."),
    ("leave with an instance held by another member id", dict(member_id="mX", epoch=-1, instance="i2"),
     E.FENCED_INSTANCE_ID, "Static member mX with instance id i2 was fenced by member m2."),
    ("temporary leave with an instance held by another member id",
     dict(member_id="mX", epoch=-2, instance="i2"), E.FENCED_INSTANCE_ID,
     "Static member mX with instance id i2 was fenced by member m2."),
    ("v0 temporary leave without member id", dict(member_id="", epoch=-2, instance="i2", version=0),
     E.FENCED_INSTANCE_ID, "Static member  with instance id i2 was fenced by member m2."),
    ("join with an instance still held", dict(member_id="m3", epoch=0, instance="i2", topics=["foo"]),
     E.UNRELEASED_INSTANCE_ID,
     "Static member m3 with instance id i2 cannot join the group because the instance id is owned "
     "by m2 member."),
    ("the holder rejoining its own instance without leaving",
     dict(member_id="m2", epoch=0, instance="i2", topics=["foo"]), E.UNRELEASED_INSTANCE_ID,
     "Static member m2 with instance id i2 cannot join the group because the instance id is owned "
     "by m2 member."),
    # FENCED_MEMBER_EPOCH (throwIfConsumerGroupMemberEpochIsInvalid)
    ("greater epoch", dict(member_id="m1", epoch=4), E.FENCED_MEMBER_EPOCH, greater(4, 3)),
    ("greater epoch, static", dict(member_id="m2", epoch=7, instance="i2"), E.FENCED_MEMBER_EPOCH,
     greater(7, 3)),
    # accepted: a fenced member rejoins with epoch 0 (Kafka 4.3, KAFKA-19233)
    ("a known member rejoining at epoch 0", dict(member_id="m1", epoch=0, topics=["foo"]),
     E.NONE, None, 3),
    ("smaller epoch, not the previous one, static", dict(member_id="m2", epoch=2, instance="i2",
                                                         owned=()),
     E.FENCED_MEMBER_EPOCH, smaller(2, 3)),
    ("previous epoch without owned partitions", dict(member_id="m1", epoch=2), E.FENCED_MEMBER_EPOCH,
     smaller(2, 3)),
    ("previous epoch owning more than its assignment", dict(member_id="m1", epoch=2, owned=_all_of),
     E.FENCED_MEMBER_EPOCH, smaller(2, 3)),
    ("previous epoch owning a partition of another topic",
     dict(member_id="m1", epoch=2, owned=lambda p: owned_names(bar=[0])), E.FENCED_MEMBER_EPOCH,
     smaller(2, 3)),
    ("previous epoch owning another member's partitions",
     dict(member_id="m1", epoch=2, owned=lambda p: p.a2), E.FENCED_MEMBER_EPOCH, smaller(2, 3)),
    ("greater epoch wins over an invalid regex", dict(member_id="m1", epoch=5, regex="["),
     E.FENCED_MEMBER_EPOCH, greater(5, 3)),
    # accepted: the response with the bumped epoch may have been lost
    ("previous epoch owning a subset (response lost)",
     dict(member_id="m1", epoch=2, owned=lambda p: {FOO: frozenset(sorted(p.a1[FOO])[:2])}),
     E.NONE, None, 3),
    ("previous epoch owning all of its assignment", dict(member_id="m1", epoch=2, owned=lambda p: p.a1),
     E.NONE, None, 3),
    ("previous epoch owning nothing", dict(member_id="m1", epoch=2, owned=()), E.NONE, None, 3),
    ("current epoch", dict(member_id="m2", epoch=3, instance="i2"), E.NONE, None, 3),
    # INVALID_REGULAR_EXPRESSION (4.0: hasMemberSubscriptionChanged -> throwIfRegularExpressionIsInvalid)
    ("join with an invalid regex", dict(member_id="m3", epoch=0, regex="["),
     E.INVALID_REGULAR_EXPRESSION, None),
    ("changing to an invalid regex", dict(member_id="m1", epoch=3, regex="(a"),
     E.INVALID_REGULAR_EXPRESSION, None),
]


def _resolve(p: Populated, fields: dict) -> dict:
    out = {}
    for k, v in fields.items():
        if callable(v):
            v = v(p)
        if k == "owned" and isinstance(v, dict):
            v = owned(v)
        if isinstance(v, str):
            v = v.format(other=p.other)
        out[k] = v
    return out


@pytest.mark.parametrize("fields,code,message,epoch", cases(LOOKUPS, 4))
def test_lookup_and_epoch_errors(fields, code, message, epoch):
    p = populate()
    fields = _resolve(p, fields)
    member_id, member_epoch = fields.pop("member_id"), fields.pop("epoch")
    before = dict(p.h.cgroup().members), p.h.cgroup().group_epoch, len(p.h.persisted)
    response = p.h.hb(member_id, member_epoch, **fields)
    assert response.error_code == code, response
    if message is not None:
        assert response.error_message == message.format(other=p.other)
    if code == E.NONE:
        assert response.member_epoch == epoch
    else:
        assert (response.member_id, response.member_epoch, response.assignment) == (None, 0, None)
        assert (dict(p.h.cgroup().members), p.h.cgroup().group_epoch, len(p.h.persisted)) == before


def test_invalid_regex_message_prefix():
    """Kafka: InvalidRegularExpression("SubscribedTopicRegex `%s` is not a valid regular
    expression: %s.") with RE2/J's description."""
    h = ConsumerHarness(topics={"foo": 2})
    response = h.hb("m1", 0, regex="[")
    assert response.error_code == E.INVALID_REGULAR_EXPRESSION
    assert response.error_message.startswith("SubscribedTopicRegex `[` is not a valid regular expression: ")
    assert response.error_message.endswith(".")
    assert G not in h.shard.consumer.groups


def test_invalid_regex_message_is_kafkas():
    h = ConsumerHarness(topics={"foo": 2})
    response = h.hb("m1", 0, regex="[")
    assert response.error_message == \
        "SubscribedTopicRegex `[` is not a valid regular expression: missing closing ]."


# --- the member-epoch checks exactly as Kafka's test seeds them ------------------------------

def seeded(static: bool) -> ConsumerHarness:
    """testConsumerGroupMemberEpochValidation[ForStaticMember]: a member at epoch 100 (previous
    99) owning foo 1-3, the group and its target at epoch 100, no topics in the image."""
    h = ConsumerHarness()
    member = ConsumerGroupMember(
        "m", instance_id="m" if static else None, client_id="client", client_host="/127.0.0.1",
        subscribed_topic_names=frozenset({"foo", "bar"}), rebalance_timeout_ms=5000,
        server_assignor="range", member_epoch=100, previous_member_epoch=99,
        state=MemberState.STABLE, assigned={FOO: frozenset({1, 2, 3})})
    h.seed([rec.member_subscription(G, member), rec.group_epoch(G, 100),
            rec.target_member(G, "m", {FOO: frozenset({1, 2, 3})}), rec.target_epoch(G, 100),
            rec.current_assignment(G, member)])
    return h


EPOCHS = [
    ("greater", 200, None, E.FENCED_MEMBER_EPOCH, greater(200, 100)),
    ("smaller", 50, None, E.FENCED_MEMBER_EPOCH, smaller(50, 100)),
    ("previous, partitions not sent", 99, None, E.FENCED_MEMBER_EPOCH, smaller(99, 100)),
    ("previous, a subset", 99, {FOO: [1, 2]}, E.NONE, 100),
    ("previous, exactly its partitions", 99, {FOO: [1, 2, 3]}, E.NONE, 100),
    ("previous, nothing", 99, {}, E.NONE, 100),
    ("previous, not a subset", 99, {FOO: [1, 2, 4]}, E.FENCED_MEMBER_EPOCH, smaller(99, 100)),
    ("previous, an unknown topic", 99, {topic_id("bar"): [1]}, E.FENCED_MEMBER_EPOCH,
     smaller(99, 100)),
    ("current", 100, None, E.NONE, 100),
    ("current, owning anything", 100, {topic_id("bar"): [7]}, E.NONE, 100),
]


@pytest.mark.parametrize("static", [False, True], ids=["dynamic", "static"])
@pytest.mark.parametrize("epoch,held,code,expected", cases(EPOCHS, 4))
def test_member_epoch_validation_as_kafka_seeds_it(static, epoch, held, code, expected):
    h = seeded(static)
    response = h.hb("m", epoch, instance="m" if static else None, rebalance=5000,
                    topics=["foo", "bar"], owned=None if held is None else owned(
                        {t: frozenset(ps) for t, ps in held.items()}) or ())
    assert response.error_code == code
    if code == E.NONE:
        assert response.member_epoch == expected and response.error_message is None
    else:
        assert response.error_message == expected


# --- GROUP_MAX_SIZE_REACHED (throwIfConsumerGroupIsFull, right after the group lookup) --------

FULL = "The consumer group has reached its maximum capacity of 2 members."


@pytest.mark.parametrize("member_id,epoch,fields,code,message", [
    pytest.param("m3", 0, dict(topics=["foo"]), E.GROUP_MAX_SIZE_REACHED, FULL, id="a new member"),
    pytest.param("", 0, dict(topics=["foo"], version=0), E.GROUP_MAX_SIZE_REACHED, FULL,
                 id="a v0 member without id"),
    pytest.param("m3", 0, dict(topics=["foo"], instance="i2"), E.GROUP_MAX_SIZE_REACHED, FULL,
                 id="before the instance check"),
    pytest.param("m9", 3, {}, E.GROUP_MAX_SIZE_REACHED, FULL, id="before the member lookup"),
    pytest.param("m1", 3, {}, E.NONE, None, id="a member of the group"),
    pytest.param("m1", 4, {}, E.FENCED_MEMBER_EPOCH, greater(4, 3), id="a member, fenced"),
    pytest.param("m2b", 0, dict(topics=["foo"], instance="i2"), E.GROUP_MAX_SIZE_REACHED, FULL,
                 id="a new member id for a known instance (KAFKA-20601 came after Kafka 4.3.1)"),
    pytest.param("m1", -1, {}, E.NONE, None, id="a member leaving"),
    pytest.param("m9", 1, dict(group="{other}"), E.GROUP_ID_NOT_FOUND,
                 "Consumer group {other} not found.", id="the group lookup comes first"),
])
def test_group_max_size(member_id, epoch, fields, code, message):
    p = populate(config(group_consumer_max_size=2))
    fields = _resolve(p, fields)
    response = p.h.hb(member_id, epoch, **fields)
    assert response.error_code == code
    assert response.error_message == (message and message.format(other=p.other))


def test_group_max_size_of_one():
    h = ConsumerHarness(config(group_consumer_max_size=1), topics={"foo": 2})
    assert h.hb("m1", 0, topics=["foo"]).error_code == E.NONE
    response = h.hb("m2", 0, topics=["foo"])
    assert (response.error_code, response.error_message) == (
        E.GROUP_MAX_SIZE_REACHED, "The consumer group has reached its maximum capacity of 1 members.")


# --- NOT_COORDINATOR ---------------------------------------------------------------------------

@pytest.mark.parametrize("epoch,fields,code", [
    pytest.param(0, dict(topics=["foo"]), E.NOT_COORDINATOR, id="join"),
    pytest.param(3, {}, E.NOT_COORDINATOR, id="heartbeat"),
    pytest.param(-1, {}, E.NOT_COORDINATOR, id="leave"),
    pytest.param(-2, dict(instance="i"), E.NOT_COORDINATOR, id="static leave"),
    pytest.param(0, dict(topics=["foo"], rebalance=-1), E.INVALID_REQUEST,
                 id="validation comes before routing"),
])
def test_not_coordinator_for_a_group_of_another_shard(epoch, fields, code):
    h = ConsumerHarness(topics={"foo": 2})
    other = group_on_shard(h.shard.shard_id, "elsewhere", same=False)
    response = h.hb("m1", epoch, group=other, **fields)
    assert response.error_code == code
    if code == E.NOT_COORDINATOR:
        assert response.error_message is None
    assert h.persisted == [] and other not in h.shard.consumer.groups


# --- a group id naming a classic group -----------------------------------------------------------

def classic_config() -> CoordinatorConfig:
    """Kafka answers GROUP_ID_NOT_FOUND to a live classic group when it may not convert it
    (group.consumer.migration.policy=disabled)."""
    names = {f.name for f in dataclasses.fields(CoordinatorConfig)}
    if "group_consumer_migration_policy" in names:
        return config(group_consumer_migration_policy="disabled")
    return CoordinatorConfig()


@pytest.mark.parametrize("epoch,fields", [
    pytest.param(0, dict(topics=["foo"]), id="join"),
    pytest.param(1, {}, id="heartbeat"),
    pytest.param(-1, {}, id="leave"),
])
def test_a_live_classic_group_is_not_a_consumer_group(epoch, fields):
    h = ConsumerHarness(classic_config(), topics={"foo": 2})
    h.stable_group(1)
    response = h.hb("m1", epoch, **fields)
    assert (response.error_code, response.error_message) == (
        E.GROUP_ID_NOT_FOUND, "Group g is not a consumer group")


def test_a_live_classic_group_is_not_a_consumer_group_code():
    """The code part of the cases above (Kafka: GROUP_ID_NOT_FOUND in every one)."""
    h = ConsumerHarness(classic_config(), topics={"foo": 2})
    h.stable_group(1)
    for epoch, fields in ((0, dict(topics=["foo"])), (1, {}), (-1, {})):
        assert h.hb("m1", epoch, **fields).error_code == E.GROUP_ID_NOT_FOUND


def test_an_empty_classic_group_gives_way_to_the_consumer_group():
    """maybeDeleteEmptyClassicGroup: its tombstone is written first."""
    h = ConsumerHarness(topics={"foo": 2})
    (member,), generation = h.stable_group(1)
    h.leave(member)
    assert h.group_state().state.value == "Empty"
    start = len(h.persisted)
    response = h.hb("m1", 0, topics=["foo"])
    assert (response.error_code, response.member_epoch) == (E.NONE, 2)
    records = h.records(start)
    assert isinstance(records[0], GroupMetadataTombstone)
    assert G in h.shard.consumer.groups


# --- leaving -----------------------------------------------------------------------------------

def test_dynamic_leave_fences_the_member_and_bumps_the_group_epoch():
    """testLeavingMemberBumpsGroupEpoch: tombstones (current, target, member), the epoch + 1."""
    p = populate()
    h = p.h
    start = len(h.persisted)
    response = h.hb("m1", -1)
    assert (response.error_code, response.member_id, response.member_epoch,
            response.heartbeat_interval_ms, response.assignment) == (E.NONE, "m1", -1, 0, None)
    assert record_kinds(h.records(start)) == [(CURRENT, "m1", True), (TARGET_MEMBER, "m1", True),
                                              (MEMBER, "m1", True), (GROUP_EPOCH, None, False)]
    assert h.records(start)[-1].value.epoch == 4
    assert "m1" not in h.cgroup().members and h.cgroup().group_epoch == 4
    assert ("consumer-session", G, "m1") not in h.shard.timers
    assert h.hb("m1", 3).error_code == E.UNKNOWN_MEMBER_ID


def test_static_leave_with_epoch_minus_one_fences_it():
    """testLeavingStaticMemberBumpsGroupEpoch: the subscription metadata is rewritten when a topic
    loses its last subscriber."""
    h = ConsumerHarness(topics={"foo": 6, "zar": 1})
    h.hb("m1", 0, topics=["foo"])
    h.hb("m2", 0, topics=["foo", "zar"], instance="i2")
    start = len(h.persisted)
    response = h.hb("m2", -1, instance="i2")
    assert (response.error_code, response.member_id, response.member_epoch) == (E.NONE, "m2", -1)
    records = h.records(start)
    assert record_kinds(records) == [(CURRENT, "m2", True), (TARGET_MEMBER, "m2", True),
                                     (MEMBER, "m2", True), (PARTITION_METADATA, None, False),
                                     (GROUP_EPOCH, None, False)]
    assert [t.topic_name for t in records[3].value.topics] == ["foo"]
    assert "i2" not in h.cgroup().static_members


def test_static_temporary_leave_keeps_the_member_and_the_group_epoch():
    """testNoGroupEpochBumpWhenStaticMemberTemporarilyLeaves: one record, the member at -2."""
    p = populate()
    h = p.h
    start = len(h.persisted)
    response = h.hb("m2", -2, instance="i2", rebalance=5000, topics=["foo"], owned=())
    assert (response.error_code, response.member_id, response.member_epoch,
            response.heartbeat_interval_ms, response.assignment) == (E.NONE, "m2", -2, 0, None)
    (record,) = h.records(start)
    assert (record.type, record.sub) == (CURRENT, "m2")
    assert (record.value.member_epoch, record.value.previous_member_epoch, record.value.state) == (-2, 3, 0)
    # KIP-1251: its partitions count as assigned at epoch 0, to whichever member takes the instance
    assert {e for tp in record.value.assigned_partitions for e in tp.assignment_epochs} == {0}
    m2 = h.member("m2")
    assert (m2.member_epoch, dict(m2.assigned), dict(m2.pending_revocation)) == (-2, p.a2, {})
    assert h.cgroup().group_epoch == 3 and h.cgroup().static_members["i2"] == "m2"


def test_static_rejoin_with_a_new_member_id_gets_its_assignment_back():
    """testStaticMemberGetsBackAssignmentUponRejoin: the old member is replaced by a copy under
    the new id (epoch 0), then reconciled to the target epoch with the same partitions."""
    p = populate()
    h = p.h
    h.hb("m2", -2, instance="i2")
    start = len(h.persisted)
    response = h.hb("m2b", 0, instance="i2", topics=["foo"])
    assert (response.error_code, response.member_id, response.member_epoch) == (E.NONE, "m2b", 3)
    assert response.heartbeat_interval_ms == 5000
    assert response_assignment(response) == p.a2
    records = h.records(start)
    assert record_kinds(records) == [
        (CURRENT, "m2", True), (TARGET_MEMBER, "m2", True), (MEMBER, "m2", True),
        (MEMBER, "m2b", False), (TARGET_MEMBER, "m2b", False), (CURRENT, "m2b", False),
        (CURRENT, "m2b", False)]
    copied, rejoined = records[5].value, records[6].value
    assert (copied.member_epoch, copied.previous_member_epoch) == (0, 0)
    assert (rejoined.member_epoch, rejoined.previous_member_epoch, rejoined.state) == (3, 0, 0)
    assert {e for tp in rejoined.assigned_partitions for e in tp.assignment_epochs} == {0}
    assert h.cgroup().group_epoch == 3
    assert set(h.cgroup().members) == {"m1", "m2b"} and h.cgroup().static_members["i2"] == "m2b"
    # the old member id is gone; the new one heartbeats on
    assert h.hb("m2", 3, instance="i2").error_code == E.FENCED_INSTANCE_ID
    assert h.hb("m2b", 3, instance="i2").error_code == E.NONE


def test_static_rejoin_with_new_topics_bumps_the_group_epoch():
    """testStaticMemberRejoinsWithNewSubscribedTopics."""
    h = ConsumerHarness(topics={"foo": 6, "bar": 3})
    h.hb("m1", 0, topics=["foo"], instance="i1")
    h.hb("m1", -2, instance="i1")
    response = h.hb("m1b", 0, topics=["foo", "bar"], instance="i1")
    assert (response.error_code, response.member_epoch) == (E.NONE, 3)
    assert response_assignment(response) == parts(foo=range(6), bar=range(3))


def test_a_static_member_that_does_not_come_back_is_fenced_at_its_session_timeout():
    p = populate()
    h = p.h
    h.advance(1_000)
    h.hb("m2", -2, instance="i2")                    # its session timer keeps running
    for _ in range(10):                               # m1 stays alive
        h.advance(5_000)
        assert h.hb("m1", h.member("m1").member_epoch, owned=h.owned_by("m1")).error_code == E.NONE
    assert "m2" not in h.cgroup().members and h.cgroup().group_epoch == 4
    assert "i2" not in h.cgroup().static_members


def test_the_replaced_members_session_timer_does_nothing():
    p = populate()
    h = p.h
    h.hb("m2", -2, instance="i2")
    h.advance(10_000)
    h.hb("m2b", 0, instance="i2", topics=["foo"])
    for _ in range(10):                               # past m2's old deadline
        h.advance(5_000)
        assert h.hb("m1", 3).error_code == E.NONE
        assert h.hb("m2b", 3, instance="i2").error_code == E.NONE
    assert set(h.cgroup().members) == {"m1", "m2b"} and h.cgroup().group_epoch == 3


def test_rejoining_while_the_instance_is_still_held_then_after_leaving():
    p = populate()
    h = p.h
    response = h.hb("m2b", 0, instance="i2", topics=["foo"])
    assert response.error_code == E.UNRELEASED_INSTANCE_ID
    assert h.hb("m2", -2, instance="i2").error_code == E.NONE
    assert h.hb("m2b", 0, instance="i2", topics=["foo"]).error_code == E.NONE
    # the instance is now held again: a third id cannot take it
    response = h.hb("m2c", 0, instance="i2", topics=["foo"])
    assert (response.error_code, response.error_message) == (
        E.UNRELEASED_INSTANCE_ID, "Static member m2c with instance id i2 cannot join the group "
        "because the instance id is owned by m2b member.")


# --- timers --------------------------------------------------------------------------------------

def test_session_expiry_fences_the_member_and_bumps_the_group_epoch():
    """testSessionTimeoutExpiration: at group.consumer.session.timeout.ms the member's records
    are tombstoned, the subscription metadata emptied and the group epoch bumped."""
    h = ConsumerHarness(topics={"foo": 6})
    response = h.hb("m1", 0, rebalance=90_000, topics=["foo"])
    assert response.member_epoch == 2
    start = len(h.persisted)
    h.advance(44_999)
    assert "m1" in h.cgroup().members and len(h.persisted) == start
    h.advance(1)
    assert record_kinds(h.records(start)) == [(CURRENT, "m1", True), (TARGET_MEMBER, "m1", True),
                                              (MEMBER, "m1", True), (PARTITION_METADATA, None, False),
                                              (GROUP_EPOCH, None, False)]
    assert h.records(start)[3].value.topics == () and h.records(start)[4].value.epoch == 3
    assert h.cgroup().members == {} and h.cgroup().group_epoch == 3
    assert ("consumer-session", G, "m1") not in h.shard.timers
    assert h.hb("m1", 2).error_code == E.UNKNOWN_MEMBER_ID


@pytest.mark.parametrize("session", [45_000, 50_000, 60_000])
def test_the_session_timeout_is_the_configured_one(session):
    h = ConsumerHarness(config(group_consumer_session_timeout_ms=session,
                               group_consumer_min_session_timeout_ms=45_000,
                               group_consumer_max_session_timeout_ms=60_000), topics={"foo": 2})
    h.hb("m1", 0, topics=["foo"])
    h.hb("m2", 0, topics=["foo"])
    for _ in range(session // 5_000 + 2):         # m2 heartbeats, m1 is silent
        h.advance(5_000)
        assert h.hb("m2", h.member("m2").member_epoch, owned=h.owned_by("m2")).error_code == E.NONE
        assert ("m1" in h.cgroup().members) == (h.now < session)


def test_every_heartbeat_rearms_the_session():
    """testSessionTimeoutLifecycle."""
    h = ConsumerHarness(topics={"foo": 6})
    epoch = h.hb("m1", 0, rebalance=90_000, topics=["foo"]).member_epoch
    for _ in range(30):
        h.advance(40_000)
        assert h.hb("m1", epoch).error_code == E.NONE
    assert h.cgroup().group_epoch == 2
    h.advance(44_999)
    assert "m1" in h.cgroup().members
    h.advance(1)
    assert "m1" not in h.cgroup().members


def test_a_member_that_does_not_revoke_in_time_is_fenced():
    """testRebalanceTimeoutExpiration: member 1 must give up a partition to member 2; it does not
    within its rebalance timeout (10 s, shorter than the session): it is fenced."""
    h = ConsumerHarness(topics={"foo": 3})
    response = h.hb("m1", 0, rebalance=10_000, topics=["foo"])
    assert (response.member_epoch, response_assignment(response)) == (2, parts(foo=[0, 1, 2]))
    h.advance(5_000)
    response = h.hb("m2", 0, rebalance=10_000, topics=["foo"])
    assert (response.member_epoch, response_assignment(response)) == (3, {})
    h.advance(5_000)
    response = h.hb("m1", 2)                          # no owned partitions: still revoking
    assert response.member_epoch == 2
    kept = response_assignment(response)
    assert kept and kept[FOO] < frozenset({0, 1, 2})
    assert h.member("m1").state == MemberState.UNREVOKED_PARTITIONS
    start = len(h.persisted)
    h.advance(9_999)
    assert "m1" in h.cgroup().members
    h.advance(1)
    assert record_kinds(h.records(start)) == [(CURRENT, "m1", True), (TARGET_MEMBER, "m1", True),
                                              (MEMBER, "m1", True), (GROUP_EPOCH, None, False)]
    assert h.records(start)[-1].value.epoch == 4
    assert ("consumer-session", G, "m1") not in h.shard.timers
    assert ("consumer-rebalance", G, "m1") not in h.shard.timers


def test_a_member_that_revokes_in_time_is_not_fenced():
    h = ConsumerHarness(topics={"foo": 3})
    h.hb("m1", 0, rebalance=10_000, topics=["foo"])
    h.hb("m2", 0, rebalance=10_000, topics=["foo"])
    h.advance(1_000)
    h.hb("m1", 2)
    assert h.member("m1").state == MemberState.UNREVOKED_PARTITIONS
    h.advance(9_000)
    response = h.hb("m1", 2, owned=owned(h.member("m1").assigned))
    assert (response.error_code, response.member_epoch) == (E.NONE, 3)
    assert ("consumer-rebalance", G, "m1") not in h.shard.timers
    h.advance(20_000)
    assert "m1" in h.cgroup().members


def test_still_revoking_heartbeats_do_not_extend_the_rebalance_timeout():
    h = ConsumerHarness(topics={"foo": 3})
    h.hb("m1", 0, rebalance=10_000, topics=["foo"])
    h.hb("m2", 0, rebalance=10_000, topics=["foo"])
    h.hb("m1", 2)
    for _ in range(3):                                # keeps reporting the revoked partition
        h.advance(3_000)
        assert h.hb("m1", 2, owned=h.owned_by("m1")).error_code == E.NONE
    h.advance(1_000)
    assert "m1" not in h.cgroup().members


@pytest.mark.parametrize("interval", [5_000, 7_000, 15_000])
def test_heartbeat_interval_is_the_configured_one(interval):
    h = ConsumerHarness(config(group_consumer_heartbeat_interval_ms=interval), topics={"foo": 2})
    answers = {
        "join": h.hb("m1", 0, topics=["foo"]),
        "static join": h.hb("m2", 0, topics=["foo"], instance="i2"),
        "heartbeat": h.hb("m1", 2),
        "full heartbeat": h.hb("m2", 3, instance="i2", rebalance=1000, topics=["foo"], owned=()),
    }
    assert {k: (r.error_code, r.heartbeat_interval_ms) for k, r in answers.items()} == \
        {k: (E.NONE, interval) for k in answers}
    # a leave or an error answer carries none (Kafka leaves the field at 0)
    assert h.hb("m2", -2, instance="i2").heartbeat_interval_ms == 0
    assert h.hb("m1", -1).heartbeat_interval_ms == 0
    assert h.hb("m9", 5).heartbeat_interval_ms == 0


# --- when the response carries the assignment ----------------------------------------------------

@pytest.mark.parametrize("fields,carries", [
    pytest.param(dict(epoch=3), False, id="light heartbeat, nothing changed"),
    pytest.param(dict(epoch=3, rebalance=1000, topics=["foo"], owned=()), True,
                 id="full request (rebalance timeout, names and owned set)"),
    pytest.param(dict(epoch=3, rebalance=1000, regex="fo.*", owned=()), True,
                 id="full request with a regex instead of names"),
    pytest.param(dict(epoch=3, topics=["foo"], owned=()), False, id="no rebalance timeout: not full"),
    pytest.param(dict(epoch=3, rebalance=1000, owned=()), False, id="no names: not full"),
    pytest.param(dict(epoch=3, rebalance=1000, topics=["foo"]), False, id="no owned: not full"),
])
def test_response_assignment_presence(fields, carries):
    """consumerGroupHeartbeat: isFullRequest || hasAssignedPartitionsChanged."""
    p = populate()
    response = p.h.hb("m1", fields.pop("epoch"), **fields)
    assert response.error_code == E.NONE
    assert (response.assignment is not None) == carries
    if carries:
        assert response_assignment(response) == p.a1


def test_join_response_has_an_assignment_even_when_empty():
    """testMemberIdGeneration: an empty Assignment, not a null one."""
    h = ConsumerHarness()
    response = h.hb("m1", 0, topics=["foo"], assignor="range")
    assert response.error_code == E.NONE and response.assignment is not None
    assert response.assignment.topic_partitions == ()


def test_member_join_records_in_kafkas_order():
    """testMemberJoinsEmptyConsumerGroup: member, subscription metadata, group epoch, target
    member, target epoch, current assignment."""
    h = ConsumerHarness(topics={"foo": 6, "bar": 3})
    response = h.hb("m1", 0, topics=["foo", "bar"], assignor="range")
    assert (response.member_epoch, response_assignment(response)) == (
        2, parts(foo=range(6), bar=range(3)))
    records = h.records()
    assert [(r.type, r.sub) for r in records] == [
        (MEMBER, "m1"), (PARTITION_METADATA, None), (GROUP_EPOCH, None), (TARGET_MEMBER, "m1"),
        (TARGET_EPOCH, None), (CURRENT, "m1")]
    assert all(isinstance(r, GroupRecord) and r.value is not None for r in records)
    current = records[-1].value
    assert (current.member_epoch, current.previous_member_epoch, current.state) == (2, 0, 0)
    assert {e for tp in current.assigned_partitions for e in tp.assignment_epochs} == {2}



def test_a_temporarily_departed_static_member_heartbeating_is_fenced():
    """Its epoch is -2: any positive epoch is greater (throwIfConsumerGroupMemberEpochIsInvalid)."""
    p = populate()
    p.h.hb("m2", -2, instance="i2")
    response = p.h.hb("m2", 3, instance="i2")
    assert (response.error_code, response.error_message) == (E.FENCED_MEMBER_EPOCH, greater(3, -2))


def test_a_static_member_leaving_while_revoking_is_not_fenced_by_its_rebalance_timeout():
    """consumerGroupStaticMemberGroupLeave clears the partitions pending revocation and sets the
    epoch to -2; the rebalance timer then finds another epoch and does nothing."""
    h = ConsumerHarness(topics={"foo": 4})
    h.hb("m1", 0, rebalance=10_000, topics=["foo"], instance="i1")
    h.hb("m2", 0, rebalance=10_000, topics=["foo"])
    h.hb("m1", 2, instance="i1")                       # revoking, timer armed for 10 s
    assert h.member("m1").state == MemberState.UNREVOKED_PARTITIONS
    h.hb("m1", -2, instance="i1")
    assert h.member("m1").pending_revocation == {}
    for _ in range(3):
        h.advance(5_000)
        h.hb("m2", h.member("m2").member_epoch, owned=h.owned_by("m2"))
    assert "m1" in h.cgroup().members and h.cgroup().group_epoch == 3
    response = h.hb("m1b", 0, topics=["foo"], instance="i1")
    assert (response.error_code, response.member_epoch) == (E.NONE, 3)
    assert h.member("m1b").state == MemberState.STABLE


def test_a_full_group_refuses_a_static_member_coming_back_under_a_new_id():
    """throwIfConsumerGroupIsFull(group, memberId) runs before the static replacement: the new
    member id is not a member yet."""
    p = populate(config(group_consumer_max_size=2))
    p.h.hb("m2", -2, instance="i2")
    response = p.h.hb("m2b", 0, topics=["foo"], instance="i2")
    assert (response.error_code, response.error_message) == (E.GROUP_MAX_SIZE_REACHED, FULL)


def test_a_join_whose_response_was_lost_is_answered_again():
    """A repeated join (epoch 0) of a known member is always accepted (Kafka 4.3, KAFKA-19233):
    it gets its epoch and its whole assignment again."""
    h = ConsumerHarness(topics={"foo": 3})
    first = h.hb("m1", 0, topics=["foo"])
    again = h.hb("m1", 0, topics=["foo"])
    assert (again.error_code, again.member_epoch) == (E.NONE, 2)
    assert response_assignment(again) == response_assignment(first) == parts(foo=[0, 1, 2])
    assert h.cgroup().group_epoch == 2
