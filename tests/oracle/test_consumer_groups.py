"""The consumer group protocol (KIP-848) against Apache Kafka: ConsumerGroupHeartbeat's
validation messages and errors in Kafka's order, member epochs, fencing, static members,
leaving, ConsumerGroupDescribe, and the classic APIs meeting a consumer group."""

import dataclasses
import re

import pytest
import trio

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.registry import API_TABLE
from tests.oracle.steps import create_topic, join_body, known_to_groups, req, sub, subscription, unique
from tests.support.differential import Alias

VERSIONS = range(API_TABLE[ApiKey.CONSUMER_GROUP_HEARTBEAT].min_version,
                 API_TABLE[ApiKey.CONSUMER_GROUP_HEARTBEAT].max_version + 1)
#: a client-generated member id (ConsumerGroupHeartbeat v1 clients make their own)
MEMBER = "Xr6q0AbXT2u8r4X0w1n9cA"
SECOND = "second-member-id-0001"


def beat(group: str, *, member_id: str = "", epoch: int = 0, instance_id: str | None = None,
         rebalance_timeout_ms: int = 30000, topics=None, regex: str | None = None,
         assignor: str | None = None, owned=()):
    """A heartbeat; ``owned`` is () when joining, as Kafka requires (None: left out)."""
    return req(ApiKey.CONSUMER_GROUP_HEARTBEAT, group_id=group, member_id=member_id, member_epoch=epoch,
               instance_id=instance_id, rack_id=None, rebalance_timeout_ms=rebalance_timeout_ms,
               subscribed_topic_names=topics, subscribed_topic_regex=regex, server_assignor=assignor,
               topic_partitions=owned)


async def topic_for_groups(oracle, topic: str, partitions: int) -> None:
    """A topic on both brokers that their group coordinators know."""
    await create_topic(oracle, topic, partitions)
    await known_to_groups(oracle, topic, partitions)


def ids_masked(answer):
    """The answer with the member ids its error message names masked (Kafka's ids are
    22 characters of URL-safe base64)."""
    if answer.error_message is None:
        return answer
    return dataclasses.replace(answer, error_message=re.sub(r"[A-Za-z0-9_-]{22}", "<member id>",
                                                            answer.error_message))


def first_member_id(version: int) -> str:
    return MEMBER if version >= 1 else ""


@pytest.mark.parametrize("version", VERSIONS)
async def test_heartbeat_validation(oracle, request, version):
    group, topic = unique(request), unique(request, "-t")
    me = first_member_id(version)
    cases = {
        "empty group id": beat("", member_id=me, topics=(topic,)),
        "no rebalance timeout in the first request": beat(group, member_id=me, rebalance_timeout_ms=-1,
                                                          topics=(topic,)),
        "no subscription in the first request": beat(group, member_id=me),
        "owned partitions left out of the first request": beat(group, member_id=me, topics=(topic,), owned=None),
        "a negative epoch other than -1 and -2": beat(group, member_id=MEMBER, epoch=-3, topics=(topic,)),
        "an unknown assignor": beat(group, member_id=me, topics=(topic,), assignor="sticky"),
        "no member id with an epoch": beat(group, epoch=5, topics=(topic,)),
        "an unknown member": beat(group, member_id="unknown-member-xyz", epoch=3, topics=(topic,)),
        "a leave of an unknown member": beat(group, member_id="unknown-member-xyz", epoch=-1),
        "empty instance id": beat(group, member_id=me, instance_id="", topics=(topic,)),
    }
    if version >= 1:
        cases["an empty member id in v1"] = beat(group, topics=(topic,))
        cases["names and a regex"] = beat(group, member_id=me, topics=(topic,), regex="matches-no-topic-.*")
        cases["an invalid regex"] = beat(group, member_id=me, regex="(unclosed")
    for what, body in cases.items():
        await oracle.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, version, body, what=what)


@pytest.mark.parametrize("version", VERSIONS)
async def test_members_epochs_and_assignments(oracle, request, version):
    group, topic = unique(request), unique(request, "-t")
    await topic_for_groups(oracle, topic, 4)
    first = await oracle.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, version,
                              beat(group, member_id=first_member_id(version), topics=(topic,)), what="a member joins")
    assert first["error_code"] == ErrorCode.NONE, first
    one, epoch = Alias(first["member_id"]), first["member_epoch"]
    owned = tuple(sub(ApiKey.CONSUMER_GROUP_HEARTBEAT, "TopicPartitions",
                      topic_id=Alias(t["topic_id"]), partitions=tuple(t["partitions"]))
        for t in (first["assignment"] or {}).get("topic_partitions", []))
    await oracle.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, version,
                      beat(group, member_id=one, epoch=epoch, topics=(topic,), owned=owned),
                      what="it acknowledges its assignment")
    second = await oracle.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, version, beat(
        group, member_id="second-member-id-0001" if version >= 1 else "", topics=(topic,)),
        what="a second member joins")
    await oracle.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, version,
                      beat(group, member_id=one, epoch=epoch, owned=owned), what="the first must revoke")
    await oracle.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, version,
                      beat(group, member_id=one, epoch=epoch + 5, owned=owned), what="a future epoch: fenced")
    await oracle.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, version,
                      beat(group, member_id=Alias(second["member_id"]), epoch=-1), what="the second leaves")
    await oracle.call(ApiKey.CONSUMER_GROUP_DESCRIBE, API_TABLE[ApiKey.CONSUMER_GROUP_DESCRIBE].max_version,
                      req(ApiKey.CONSUMER_GROUP_DESCRIBE, group_ids=(group, group + "-none", ""),
                          include_authorized_operations=True))


@pytest.mark.parametrize("version", VERSIONS)
async def test_static_members(oracle, request, version):
    group, topic = unique(request), unique(request, "-t")
    await topic_for_groups(oracle, topic, 2)
    first = await oracle.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, version, beat(
        group, member_id=first_member_id(version), instance_id="instance-1", topics=(topic,)))
    in_use = beat(group, member_id="another-member-id-01" if version >= 1 else "", instance_id="instance-1",
                  topics=(topic,))
    if version >= 1:
        await oracle.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, version, in_use, what="the instance id is in use")
    else:       # each coordinator made the refused member's id, which only its message names
        ours, kafka = await oracle.both(ApiKey.CONSUMER_GROUP_HEARTBEAT, version, in_use)
        oracle.compare(ApiKey.CONSUMER_GROUP_HEARTBEAT, version, ids_masked(ours), ids_masked(kafka),
                       what="the instance id is in use")
    await oracle.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, version, beat(
        group, member_id=Alias(first["member_id"]), instance_id="instance-1", epoch=-2),
        what="a static member leaves for now")
    await oracle.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, version, beat(
        group, member_id="another-member-id-02" if version >= 1 else "", instance_id="instance-1",
        topics=(topic,)), what="the instance comes back with a new member id")


@pytest.mark.parametrize("version", range(API_TABLE[ApiKey.CONSUMER_GROUP_DESCRIBE].min_version,
                                          API_TABLE[ApiKey.CONSUMER_GROUP_DESCRIBE].max_version + 1))
async def test_consumer_group_describe(oracle, request, version):
    group, topic = unique(request), unique(request, "-t")
    await topic_for_groups(oracle, topic, 3)
    await oracle.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, beat(group, member_id=MEMBER, topics=(topic,),
                                                               instance_id="i-1"))
    await oracle.call(ApiKey.JOIN_GROUP, 9, join_body(group + "-classic"))
    await oracle.call(ApiKey.CONSUMER_GROUP_DESCRIBE, version, req(
        ApiKey.CONSUMER_GROUP_DESCRIBE, group_ids=(group, group + "-classic", group + "-none", ""),
        include_authorized_operations=False))


async def test_classic_apis_meet_a_consumer_group(oracle, request):
    group, topic = unique(request), unique(request, "-t")
    await topic_for_groups(oracle, topic, 2)
    await oracle.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, beat(group, member_id=MEMBER, topics=(topic,)))
    for version in range(API_TABLE[ApiKey.DESCRIBE_GROUPS].max_version + 1):
        await oracle.call(ApiKey.DESCRIBE_GROUPS, version, req(ApiKey.DESCRIBE_GROUPS, groups=(group,),
                          include_authorized_operations=version >= 3), what="a consumer group described")
    ours, kafka = await oracle.both(ApiKey.LIST_GROUPS, 5, req(ApiKey.LIST_GROUPS, types_filter=("consumer",)))
    oracle.compare(ApiKey.LIST_GROUPS, 5, [g for g in ours.groups if g.group_id == group],
                   [g for g in kafka.groups if g.group_id == group])
    await oracle.call(ApiKey.DELETE_GROUPS, 2, req(ApiKey.DELETE_GROUPS, groups_names=(group,)),
                      what="a consumer group with a member")
    await oracle.call(ApiKey.HEARTBEAT, 4, req(ApiKey.HEARTBEAT, group_id=group, generation_id=1,
                                               member_id=MEMBER), what="a classic heartbeat")
    await oracle.call(ApiKey.SYNC_GROUP, 5, req(ApiKey.SYNC_GROUP, group_id=group, generation_id=1,
                                                member_id=MEMBER, protocol_type="consumer",
                                                protocol_name="range"), what="a classic sync")
    await oracle.call(ApiKey.JOIN_GROUP, 9, join_body(group, protocol_type="connect"),
                      what="a classic member of another protocol type")


def owned_of(answer: dict) -> tuple:
    """The TopicPartitions a heartbeat answer assigned, as the member reports them back."""
    return tuple(sub(ApiKey.CONSUMER_GROUP_HEARTBEAT, "TopicPartitions", topic_id=Alias(t["topic_id"]),
                     partitions=tuple(t["partitions"]))
                 for t in (answer["assignment"] or {}).get("topic_partitions", []))


async def describe(oracle, group: str, what: str) -> dict:
    return await oracle.call(ApiKey.CONSUMER_GROUP_DESCRIBE, API_TABLE[ApiKey.CONSUMER_GROUP_DESCRIBE].max_version,
                             req(ApiKey.CONSUMER_GROUP_DESCRIBE, group_ids=(group,)), what=what)


async def test_assignment_interval(oracle, request):
    """Kafka 4.3 batches target assignments: a group's next one waits until
    group.consumer.assignment.interval.ms (1 s) has passed since its last one. A member joining
    meanwhile gets the current target's epoch and nothing; the first heartbeat after the interval
    computes the new target, and the members reconcile to it."""
    hb, group, topic = ApiKey.CONSUMER_GROUP_HEARTBEAT, unique(request), unique(request, "-t")
    await topic_for_groups(oracle, topic, 4)
    first = await oracle.call(hb, 1, beat(group, member_id=MEMBER, topics=(topic,)),
                              what="the first member of a new group: assigned at once, at epoch 2")
    held = owned_of(first)
    await oracle.call(hb, 1, beat(group, member_id=MEMBER, epoch=first["member_epoch"], owned=held),
                      what="it acknowledges")
    second = await oracle.call(hb, 1, beat(group, member_id=SECOND, topics=(topic,)),
                               what="a second member within the interval: the current epoch, nothing assigned")
    await oracle.call(hb, 1, beat(group, member_id=MEMBER, epoch=first["member_epoch"], owned=held),
                      what="the first keeps everything meanwhile")
    await describe(oracle, group, "assigning: the group epoch is ahead of the assignment epoch")
    await trio.sleep(1.2)
    revoking = await oracle.call(hb, 1, beat(group, member_id=MEMBER, epoch=first["member_epoch"], owned=held),
                                 what="after the interval: a new target, which the first revokes towards")
    await oracle.call(hb, 1, beat(group, member_id=SECOND, epoch=second["member_epoch"], owned=()),
                      what="the second waits for the partitions to be released")
    await describe(oracle, group, "reconciling, the first revoking")
    revoked = await oracle.call(hb, 1, beat(group, member_id=MEMBER, epoch=revoking["member_epoch"],
                                            owned=owned_of(revoking)), what="the first has revoked: the new epoch")
    third = await oracle.call(hb, 1, beat(group, member_id=SECOND, epoch=second["member_epoch"], owned=()),
                              what="the second gets the released partitions")
    await oracle.call(hb, 1, beat(group, member_id=SECOND, epoch=third["member_epoch"], owned=owned_of(third)),
                      what="and acknowledges them")
    await oracle.call(hb, 1, beat(group, member_id=MEMBER, epoch=revoked["member_epoch"], owned=owned_of(revoking)),
                      what="the first is stable")
    await describe(oracle, group, "stable")


@pytest.mark.parametrize("version", VERSIONS)
async def test_fenced_member_rejoins_with_epoch_0(oracle, request, version):
    """A fenced member may rejoin with epoch 0 under its own member id (Kafka 4.3, KAFKA-19233):
    it comes back with its epoch and its whole assignment."""
    hb, group, topic = ApiKey.CONSUMER_GROUP_HEARTBEAT, unique(request), unique(request, "-t")
    await topic_for_groups(oracle, topic, 2)
    first = await oracle.call(hb, version, beat(group, member_id=first_member_id(version), topics=(topic,)))
    me, held = Alias(first["member_id"]), owned_of(first)
    await oracle.call(hb, version, beat(group, member_id=me, epoch=first["member_epoch"], owned=held))
    await oracle.call(hb, version, beat(group, member_id=me, epoch=first["member_epoch"] + 3, owned=held),
                      what="a future epoch: fenced")
    again = await oracle.call(hb, version, beat(group, member_id=me, topics=(topic,)),
                              what="it rejoins with epoch 0 and its member id")
    await oracle.call(hb, version, beat(group, member_id=me, epoch=again["member_epoch"], owned=owned_of(again)),
                      what="and goes on")
    await oracle.call(hb, version, beat(group, member_id=me, topics=(topic,), owned=held),
                      what="a rejoin must not report owned partitions")
    await describe(oracle, group, "the member is still there")


async def test_static_member_rejoins_a_full_group(oracle, request):
    """A group of group.consumer.max.size members (4 here) refuses a new member, and in Kafka
    4.3.1 the instance of a static member coming back under a new member id too (KAFKA-20601,
    which lets it in, came after 4.3.1)."""
    hb, group, topic = ApiKey.CONSUMER_GROUP_HEARTBEAT, unique(request), unique(request, "-t")
    await topic_for_groups(oracle, topic, 2)
    static = await oracle.call(hb, 1, beat(group, member_id=MEMBER, instance_id="i-1", topics=(topic,)))
    for n in range(3):
        await oracle.call(hb, 1, beat(group, member_id=f"dynamic-member-{n:07d}", topics=(topic,)))
    await oracle.call(hb, 1, beat(group, member_id="one-too-many-0000001", topics=(topic,)),
                      what="the group is full")
    await oracle.call(hb, 1, beat(group, member_id=Alias(static["member_id"]), instance_id="i-1", epoch=-2),
                      what="the static member leaves for now")
    await oracle.call(hb, 1, beat(group, member_id="one-too-many-0000002", topics=(topic,)),
                      what="still full: the static member keeps its place")
    await oracle.call(hb, 1, beat(group, member_id="one-too-many-0000003", instance_id="i-2", topics=(topic,)),
                      what="a new instance is refused too")
    await oracle.call(hb, 1, beat(group, member_id="static-comes-back-01", instance_id="i-1", topics=(topic,)),
                      what="the instance comes back under a new member id: refused")
    await describe(oracle, group, "four members, the static one away")


def alter_group(group: str, *configs: tuple[str, str | None]):
    """IncrementalAlterConfigs of a GROUP resource: set each (name, value), delete where None."""
    api = ApiKey.INCREMENTAL_ALTER_CONFIGS
    return req(api, validate_only=False, resources=(sub(api, "AlterConfigsResource", resource_type=32,
                                                        resource_name=group, configs=tuple(
        sub(api, "AlterableConfig", name=name, config_operation=0 if value is not None else 1, value=value)
        for name, value in configs)),))


async def kafka_group_config(oracle, group: str, name: str, value: str) -> None:
    """Wait until Kafka's broker shows a group config it was just given (its group coordinator
    takes it in the same metadata update, a moment after)."""
    api = ApiKey.DESCRIBE_CONFIGS
    body = req(api, resources=(sub(api, "DescribeConfigsResource", resource_type=32, resource_name=group,
                                   configuration_keys=(name,)),))
    with trio.fail_after(30):
        while True:
            answer = await oracle.kafka.client.call(api, 4, body)
            if any(c.name == name and c.value == value for c in answer.results[0].configs):
                break
            await trio.sleep(0.05)
    await trio.sleep(0.2)


async def test_group_assignment_interval(oracle, request):
    """consumer.assignment.interval.ms, a group config of Kafka 4.3: validated against the
    broker's bounds (0 and 15 s by default); 0 assigns at every group epoch. The assignor offload
    switch of KIP-1263 is no config of Kafka 4.3."""
    hb, group, topic = ApiKey.CONSUMER_GROUP_HEARTBEAT, unique(request), unique(request, "-t")
    alter = ApiKey.INCREMENTAL_ALTER_CONFIGS
    for what, value in (("above the maximum", "15001"), ("negative", "-1"), ("not a number", "soon")):
        await oracle.call(alter, 1, alter_group(group, ("consumer.assignment.interval.ms", value)), what=what)
    await oracle.call(alter, 1, alter_group(group, ("consumer.assignor.offload.enable", "true")),
                      what="the offload switch is unknown")
    await oracle.call(alter, 1, alter_group(group, ("consumer.assignment.interval.ms", "0")), what="no batching")
    await kafka_group_config(oracle, group, "consumer.assignment.interval.ms", "0")
    await topic_for_groups(oracle, topic, 2)
    first = await oracle.call(hb, 1, beat(group, member_id=MEMBER, topics=(topic,)))
    held = owned_of(first)
    await oracle.call(hb, 1, beat(group, member_id=MEMBER, epoch=first["member_epoch"], owned=held))
    second = await oracle.call(hb, 1, beat(group, member_id=SECOND, topics=(topic,)),
                               what="a second member: a new target at once")
    await oracle.call(hb, 1, beat(group, member_id=MEMBER, epoch=first["member_epoch"], owned=held),
                      what="the first must revoke")
    await oracle.call(hb, 1, beat(group, member_id=SECOND, epoch=second["member_epoch"], owned=()))
    await describe(oracle, group, "reconciling")


def classic_join(group: str, member_id: str = "", *, metadata: bytes, protocol_type: str = "consumer"):
    return req(ApiKey.JOIN_GROUP, group_id=group, session_timeout_ms=30000, rebalance_timeout_ms=30000,
               member_id=member_id, group_instance_id=None, protocol_type=protocol_type, reason=None,
               protocols=(sub(ApiKey.JOIN_GROUP, "JoinGroupRequestProtocol", name="range", metadata=metadata),))


async def test_classic_member_in_a_consumer_group(oracle, request):
    """A classic member joins a consumer group at its target assignment's epoch, and is asked
    to rejoin only once a newer target exists, not for a group epoch whose assignment waits for
    the interval (Kafka 4.3, KAFKA-20272). Malformed or foreign joins are refused."""
    hb, group, topic = ApiKey.CONSUMER_GROUP_HEARTBEAT, unique(request), unique(request, "-t")
    await topic_for_groups(oracle, topic, 2)
    first = await oracle.call(hb, 1, beat(group, member_id=MEMBER, topics=(topic,)))
    held = owned_of(first)
    await oracle.call(hb, 1, beat(group, member_id=MEMBER, epoch=first["member_epoch"], owned=held))
    asked = await oracle.call(ApiKey.JOIN_GROUP, 9, classic_join(group, metadata=subscription(topic)),
                              what="a classic member needs a member id")
    classic = Alias(asked["member_id"])
    joined = await oracle.call(ApiKey.JOIN_GROUP, 9, classic_join(group, classic, metadata=subscription(topic)),
                               what="it joins at the current target's epoch")
    await oracle.call(ApiKey.HEARTBEAT, 4, req(ApiKey.HEARTBEAT, group_id=group, generation_id=joined["generation_id"],
                                               member_id=classic),
                      what="no rebalance while the next assignment waits for the interval")
    await oracle.call(ApiKey.SYNC_GROUP, 5, req(ApiKey.SYNC_GROUP, group_id=group,
                                                generation_id=joined["generation_id"], member_id=classic,
                                                protocol_type="consumer", protocol_name="range"),
                      what="its (empty) assignment")
    await oracle.call(ApiKey.JOIN_GROUP, 9, classic_join(group, classic, metadata=b"\x00\x09garbage"),
                      what="a malformed subscription")
    await oracle.call(ApiKey.JOIN_GROUP, 9, classic_join(group, classic, metadata=subscription(topic),
                                                         protocol_type="connect"),
                      what="another protocol type")
    await trio.sleep(1.2)
    await oracle.call(hb, 1, beat(group, member_id=MEMBER, epoch=first["member_epoch"], owned=held),
                      what="after the interval: a new target; the consumer member revokes")
    await oracle.call(ApiKey.HEARTBEAT, 4, req(ApiKey.HEARTBEAT, group_id=group, generation_id=joined["generation_id"],
                                               member_id=classic),
                      what="now the classic member must rejoin")
    await describe(oracle, group, "a mixed group")


def commit_at(group: str, member, epoch: int, topic: str, partitions):
    """OffsetCommit v9 of ``partitions`` of ``topic`` stamped with member epoch ``epoch``."""
    api = ApiKey.OFFSET_COMMIT
    return req(api, group_id=group, generation_id_or_member_epoch=epoch, member_id=member, topics=(
        sub(api, "OffsetCommitRequestTopic", name=topic, partitions=tuple(
            sub(api, "OffsetCommitRequestPartition", partition_index=p, committed_offset=10 + p,
                committed_metadata=None) for p in partitions)),))


async def test_commits_with_an_older_member_epoch(oracle, request):
    """KIP-1251 (Kafka 4.3): a commit with an older member epoch is taken for the partitions the
    member has held since that epoch (or is revoking), STALE_MEMBER_EPOCH otherwise."""
    hb, group, topic = ApiKey.CONSUMER_GROUP_HEARTBEAT, unique(request), unique(request, "-t")
    commit = ApiKey.OFFSET_COMMIT
    await oracle.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, alter_group(group, ("consumer.assignment.interval.ms", "0")))
    await kafka_group_config(oracle, group, "consumer.assignment.interval.ms", "0")
    await topic_for_groups(oracle, topic, 4)
    first = await oracle.call(hb, 1, beat(group, member_id=MEMBER, topics=(topic,)))
    old, held = first["member_epoch"], owned_of(first)
    await oracle.call(hb, 1, beat(group, member_id=MEMBER, epoch=old, owned=held))
    await oracle.call(hb, 1, beat(group, member_id=SECOND, topics=(topic,)))
    revoking = await oracle.call(hb, 1, beat(group, member_id=MEMBER, epoch=old, owned=held))
    kept = sorted(p for t in revoking["assignment"]["topic_partitions"] for p in t["partitions"])
    given = sorted(set(range(4)) - set(kept))
    await oracle.call(commit, 9, commit_at(group, MEMBER, old, topic, range(4)),
                      what="while revoking: everything it still holds")
    done = await oracle.call(hb, 1, beat(group, member_id=MEMBER, epoch=old, owned=owned_of(revoking)))
    assert done["member_epoch"] > old
    await oracle.call(commit, 9, commit_at(group, MEMBER, old, topic, kept), what="the old epoch, partitions kept")
    await oracle.call(commit, 9, commit_at(group, MEMBER, old, topic, given), what="the old epoch, partitions given up")
    await oracle.call(commit, 9, commit_at(group, MEMBER, old - 1, topic, kept), what="older than the assignment")
    await oracle.call(commit, 9, commit_at(group, MEMBER, done["member_epoch"] + 1, topic, kept), what="a newer epoch")
    await oracle.call(commit, 9, commit_at(group, MEMBER, done["member_epoch"], topic, given),
                      what="the current epoch: partitions are not checked")
    await oracle.call(commit, 8, commit_at(group, MEMBER, done["member_epoch"], topic, kept),
                      what="a consumer-protocol member needs v9")
