"""The consumer group protocol (KIP-848) against Apache Kafka: ConsumerGroupHeartbeat's
validation messages and errors in Kafka's order, member epochs, fencing, static members,
leaving, ConsumerGroupDescribe, and the classic APIs meeting a consumer group."""

import pytest

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.registry import API_TABLE
from tests.oracle.steps import create_topic, join_body, req, sub, unique
from tests.support.differential import Alias

VERSIONS = range(API_TABLE[ApiKey.CONSUMER_GROUP_HEARTBEAT].min_version,
                 API_TABLE[ApiKey.CONSUMER_GROUP_HEARTBEAT].max_version + 1)
#: a client-generated member id (ConsumerGroupHeartbeat v1 clients make their own)
MEMBER = "Xr6q0AbXT2u8r4X0w1n9cA"


def beat(group: str, *, member_id: str = "", epoch: int = 0, instance_id: str | None = None,
         rebalance_timeout_ms: int = 30000, topics=None, regex: str | None = None,
         assignor: str | None = None, owned=()):
    """A heartbeat; ``owned`` is () when joining, as Kafka requires (None: left out)."""
    return req(ApiKey.CONSUMER_GROUP_HEARTBEAT, group_id=group, member_id=member_id, member_epoch=epoch,
               instance_id=instance_id, rack_id=None, rebalance_timeout_ms=rebalance_timeout_ms,
               subscribed_topic_names=topics, subscribed_topic_regex=regex, server_assignor=assignor,
               topic_partitions=owned)


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
        cases["names and a regex"] = beat(group, member_id=me, topics=(topic,), regex="t.*")
        cases["an invalid regex"] = beat(group, member_id=me, regex="(unclosed")
    for what, body in cases.items():
        await oracle.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, version, body, what=what)


@pytest.mark.parametrize("version", VERSIONS)
async def test_members_epochs_and_assignments(oracle, request, version):
    group, topic = unique(request), unique(request, "-t")
    await create_topic(oracle, topic, 4)
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
    await create_topic(oracle, topic, 2)
    first = await oracle.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, version, beat(
        group, member_id=first_member_id(version), instance_id="instance-1", topics=(topic,)))
    await oracle.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, version, beat(
        group, member_id="another-member-id-01" if version >= 1 else "", instance_id="instance-1",
        topics=(topic,)), what="the instance id is in use")
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
    await create_topic(oracle, topic, 3)
    await oracle.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, beat(group, member_id=MEMBER, topics=(topic,),
                                                               instance_id="i-1"))
    await oracle.call(ApiKey.JOIN_GROUP, 9, join_body(group + "-classic"))
    await oracle.call(ApiKey.CONSUMER_GROUP_DESCRIBE, version, req(
        ApiKey.CONSUMER_GROUP_DESCRIBE, group_ids=(group, group + "-classic", group + "-none", ""),
        include_authorized_operations=False))


async def test_classic_apis_meet_a_consumer_group(oracle, request):
    group, topic = unique(request), unique(request, "-t")
    await create_topic(oracle, topic, 2)
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
