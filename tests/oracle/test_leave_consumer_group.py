"""LeaveGroup naming members of a consumer group against Apache Kafka: members of either
protocol, static or dynamic, leave; unknown and fenced identities are answered per member; the
group epoch grows once; a consumer group left with only classic members becomes a classic group.
(The Java Admin's removeMembersFromConsumerGroup with no members named sends such a request.)"""

import pytest

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.registry import API_TABLE
from tests.oracle.steps import req, sub, subscription, unique
from tests.oracle.test_consumer_groups import MEMBER, SECOND, beat, classic_join, topic_for_groups
from tests.support.differential import Alias

HB = ApiKey.CONSUMER_GROUP_HEARTBEAT
LEAVE_MAX = API_TABLE[ApiKey.LEAVE_GROUP].max_version


async def describe(oracle, group: str, what: str) -> dict:
    """ConsumerGroupDescribe; its members come in the order of Kafka's hash map, which hangs on
    the member ids each broker made for its classic member: compared in content order."""
    return await oracle.call(ApiKey.CONSUMER_GROUP_DESCRIBE, API_TABLE[ApiKey.CONSUMER_GROUP_DESCRIBE].max_version,
                             req(ApiKey.CONSUMER_GROUP_DESCRIBE, group_ids=(group,)), what=what,
                             unordered=("members",))


def leave_body(group: str, *members):
    """LeaveGroup v3+ naming ``members``: (member id, instance id) pairs."""
    return req(ApiKey.LEAVE_GROUP, group_id=group, members=tuple(
        sub(ApiKey.LEAVE_GROUP, "MemberIdentity", member_id=m, group_instance_id=i, reason="removed")
        for m, i in members))


async def mixed_group(oracle, group: str, topic: str):
    """Two consumer-protocol members (one static) and a dynamic classic member; returns the
    classic member's id."""
    await topic_for_groups(oracle, topic, 3)
    await oracle.call(HB, 1, beat(group, member_id=MEMBER, topics=(topic,)), what="a dynamic member")
    await oracle.call(HB, 1, beat(group, member_id=SECOND, instance_id="i-b", topics=(topic,)),
                      what="a static member")
    asked = await oracle.call(ApiKey.JOIN_GROUP, 9, classic_join(group, metadata=subscription(topic)),
                              what="a classic member needs a member id")
    classic = Alias(asked["member_id"])
    joined = await oracle.call(ApiKey.JOIN_GROUP, 9, classic_join(group, classic, metadata=subscription(topic)),
                               what="a classic member joins")
    assert joined["error_code"] == ErrorCode.NONE, joined
    await describe(oracle, group, "before the members are removed")
    return classic


async def test_remove_every_member(oracle, request):
    """The Admin's "remove all": every member named by member id (and instance id for the
    static one), with an unknown member, an unknown instance and a fenced instance beside them."""
    group, topic = unique(request), unique(request, "-t")
    classic = await mixed_group(oracle, group, topic)
    answer = await oracle.call(ApiKey.LEAVE_GROUP, LEAVE_MAX, leave_body(
        group, (MEMBER, None), ("unknown-member-xyz", None), ("not-the-member-id", "i-b"),
        (SECOND, "i-b"), ("", "i-none"), (classic, None), (MEMBER, None)),
        what="every member, and identities that are not")
    assert [m["error_code"] for m in answer["members"]][0] == ErrorCode.NONE, answer
    await describe(oracle, group, "the group after every member left")
    await oracle.call(HB, 1, beat(group, member_id=MEMBER, epoch=1, topics=(topic,)),
                      what="a removed member's heartbeat")
    await oracle.call(ApiKey.LEAVE_GROUP, LEAVE_MAX, leave_body(group, (MEMBER, None), ("", "i-b")),
                      what="members already gone")


async def test_remove_static_member_by_instance_id(oracle, request):
    """A static consumer-protocol member named by its instance id alone (no member id) leaves:
    the answer names the member id as the request did."""
    group, topic = unique(request), unique(request, "-t")
    await mixed_group(oracle, group, topic)
    await oracle.call(ApiKey.LEAVE_GROUP, LEAVE_MAX, leave_body(group, ("", "i-b")),
                      what="the static member by instance id")
    await describe(oracle, group, "the group after the static member left")


async def test_consumer_members_leave_a_classic_member_behind(oracle, request):
    """Both consumer-protocol members leave in one request: the classic member is left alone,
    and the group becomes a classic group, rebalancing."""
    group, topic = unique(request), unique(request, "-t")
    classic = await mixed_group(oracle, group, topic)
    await oracle.call(ApiKey.LEAVE_GROUP, LEAVE_MAX, leave_body(group, (MEMBER, None), (SECOND, "i-b")),
                      what="the consumer-protocol members")
    await describe(oracle, group, "no longer a consumer group")
    await oracle.call(ApiKey.DESCRIBE_GROUPS, 5, req(ApiKey.DESCRIBE_GROUPS, groups=(group,),
                                                     include_authorized_operations=False),
                      what="the classic group")
    await oracle.call(ApiKey.HEARTBEAT, 4, req(ApiKey.HEARTBEAT, group_id=group, generation_id=3,
                                               member_id=classic), what="the classic member must rejoin")


@pytest.mark.parametrize("version", range(API_TABLE[ApiKey.LEAVE_GROUP].min_version, 3))
async def test_leave_before_v3(oracle, request, version):
    """LeaveGroup v0-2 names one member by its member id: a consumer-protocol member leaves."""
    group, topic = unique(request), unique(request, "-t")
    await topic_for_groups(oracle, topic, 2)
    await oracle.call(HB, 1, beat(group, member_id=MEMBER, topics=(topic,)), what="a member")
    await oracle.call(HB, 1, beat(group, member_id=SECOND, topics=(topic,)), what="another member")
    await oracle.call(ApiKey.LEAVE_GROUP, version, req(ApiKey.LEAVE_GROUP, group_id=group,
                                                       member_id="unknown-member-xyz"),
                      what="an unknown member")
    await oracle.call(ApiKey.LEAVE_GROUP, version, req(ApiKey.LEAVE_GROUP, group_id=group, member_id=MEMBER),
                      what="a consumer-protocol member")
    await describe(oracle, group, "one member left")
