"""Share groups (KIP-932) against Apache Kafka: ShareGroupHeartbeat's validation and errors in
Kafka's order, member epochs, the assignment that follows the share state's initialization,
partitions shared by several members, leaving, ShareGroupDescribe, and the other group APIs
meeting a share group."""

import dataclasses

import trio

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from tests.oracle.steps import create_topic, join_body, known_to_groups, req, sub, unique

HEARTBEAT, DESCRIBE = ApiKey.SHARE_GROUP_HEARTBEAT, ApiKey.SHARE_GROUP_DESCRIBE
MEMBER = "Xr6q0AbXT2u8r4X0w1n9cA"
SECOND = "Ys7r1BcYU3v9s5Y1x2o0dB"
THIRD = "Zt8s2CdZV4w0t6Z2y3p1eC"


def beat(group: str, member_id: str = MEMBER, epoch: int = 0, topics=None, rack_id=None):
    return req(HEARTBEAT, group_id=group, member_id=member_id, member_epoch=epoch, rack_id=rack_id,
               subscribed_topic_names=topics)


def describe(*groups: str):
    return req(DESCRIBE, group_ids=groups, include_authorized_operations=True)


def counted(answer):
    """The answer with each topic's partitions replaced by how many there are: which ones a
    member gets depends on the hash of the topic's id, random on each broker (the assignor is
    compared with Kafka's own on equal ids in tests/interop)."""
    def count(topic_partitions):
        return tuple(dataclasses.replace(tp, partitions=(len(tp.partitions),)) for tp in topic_partitions)
    if getattr(answer, "assignment", None) is not None:
        return dataclasses.replace(answer, assignment=dataclasses.replace(
            answer.assignment, topic_partitions=count(answer.assignment.topic_partitions)))
    if hasattr(answer, "groups"):
        return dataclasses.replace(answer, groups=tuple(dataclasses.replace(g, members=tuple(
            dataclasses.replace(m, assignment=dataclasses.replace(
                m.assignment, topic_partitions=count(m.assignment.topic_partitions)))
            for m in g.members)) for g in answer.groups))
    return answer


async def call_counted(oracle, api_key, body, what: str = "", unordered=()) -> dict:
    ours, kafka = await oracle.both(api_key, 1, body)
    return oracle.compare(api_key, 1, counted(ours), counted(kafka), what=what, unordered=unordered)


async def topic_for_groups(oracle, topic: str, partitions: int) -> None:
    await create_topic(oracle, topic, partitions)
    await known_to_groups(oracle, topic, partitions)


async def assigned(oracle, group: str, member_id: str, epoch: int, what: str, topics=None) -> dict:
    """Heartbeat until both brokers give the member an assignment with partitions (the share
    state of its topics is created after its first heartbeat), then compare. With ``topics``,
    each heartbeat is a full one, whose answer always carries the assignment."""
    deadline = trio.current_time() + 10
    while True:
        ours, kafka = await oracle.both(HEARTBEAT, 1, beat(group, member_id, epoch, topics=topics))
        if all(a.assignment is not None and a.assignment.topic_partitions for a in (ours, kafka)) \
                or trio.current_time() > deadline:
            return oracle.compare(HEARTBEAT, 1, ours, kafka, what=what, unordered=("topic_partitions",))
        epoch = max(epoch, 0)
        await trio.sleep(0.2)


async def test_heartbeat_validation(oracle, request):
    group, topic = unique(request), unique(request, "-t")
    cases = {
        "empty member id": beat(group, member_id="", topics=(topic,)),
        "blank member id": beat(group, member_id="  ", topics=(topic,)),
        "empty group id": beat("", topics=(topic,)),
        "empty rack id": beat(group, topics=(topic,), rack_id=""),
        "no subscription in the first request": beat(group),
        "an empty subscription in the first request": beat(group, topics=()),
        "an epoch below -1": beat(group, epoch=-2, topics=(topic,)),
        "an unknown group": beat(group, epoch=3),
        "a leave from an unknown group": beat(group, epoch=-1),
    }
    for what, body in cases.items():
        await oracle.call(HEARTBEAT, 1, body, what=what)
    await oracle.call(DESCRIBE, 1, describe(group, ""), what="unknown and empty group ids")


async def test_members_share_partitions(oracle, request):
    group, topic = unique(request), unique(request, "-t")
    await topic_for_groups(oracle, topic, 2)
    first = await oracle.call(HEARTBEAT, 1, beat(group, topics=(topic,)), what="a member joins")
    assert first["error_code"] == ErrorCode.NONE, first
    answer = await assigned(oracle, group, MEMBER, first["member_epoch"], "its partitions once initialized")
    epoch = answer["member_epoch"]
    await oracle.call(HEARTBEAT, 1, beat(group, epoch=epoch), what="a plain heartbeat")
    await oracle.call(HEARTBEAT, 1, beat(group, epoch=epoch + 3), what="a future epoch: fenced")
    await oracle.call(HEARTBEAT, 1, beat(group, member_id="unknown-member", epoch=epoch),
                      what="an unknown member")
    for other in (SECOND, THIRD):
        joined = await call_counted(oracle, HEARTBEAT, beat(group, member_id=other, topics=(topic,)),
                                    what="another member joins")
        assert joined["error_code"] == ErrorCode.NONE, joined
    for member in (MEMBER, SECOND, THIRD):
        await call_counted(oracle, HEARTBEAT, beat(group, member_id=member, epoch=epoch),
                           what="three members on two partitions")
    await call_counted(oracle, DESCRIBE, describe(group))
    ours, kafka = await oracle.both(ApiKey.LIST_GROUPS, 5, req(ApiKey.LIST_GROUPS, states_filter=(),
                                                                types_filter=("share",)))
    mine = [dataclasses.replace(a, groups=tuple(g for g in a.groups if g.group_id == group)) for a in (ours, kafka)]
    listed = oracle.compare(ApiKey.LIST_GROUPS, 5, *mine, what="share groups listed (this test's)")
    assert [g["group_type"] for g in listed["groups"]] == ["share"], listed
    await oracle.call(HEARTBEAT, 1, beat(group, member_id=SECOND, epoch=-1), what="a member leaves")
    await call_counted(oracle, DESCRIBE, describe(group))
    await oracle.call(ApiKey.DELETE_GROUPS, 2, req(ApiKey.DELETE_GROUPS, groups_names=(group,)),
                      what="a share group with members is not deleted")
    for member in (MEMBER, THIRD):
        await oracle.call(HEARTBEAT, 1, beat(group, member_id=member, epoch=-1), what="the others leave")
    await oracle.call(DESCRIBE, 1, describe(group), what="an empty share group")
    await oracle.call(ApiKey.DELETE_GROUPS, 2, req(ApiKey.DELETE_GROUPS, groups_names=(group,)),
                      what="an empty share group is deleted")
    await oracle.call(DESCRIBE, 1, describe(group), what="gone")


async def test_other_group_apis_meet_a_share_group(oracle, request):
    group, topic = unique(request), unique(request, "-t")
    await topic_for_groups(oracle, topic, 1)
    await oracle.call(HEARTBEAT, 1, beat(group, topics=(topic,)), what="a share group")
    consumer = req(ApiKey.CONSUMER_GROUP_HEARTBEAT, group_id=group, member_id=SECOND, member_epoch=0,
                   instance_id=None, rack_id=None, rebalance_timeout_ms=30000, subscribed_topic_names=(topic,),
                   subscribed_topic_regex=None, server_assignor=None, topic_partitions=())
    await oracle.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, consumer, what="a consumer member")
    await oracle.call(ApiKey.CONSUMER_GROUP_DESCRIBE, 1, req(ApiKey.CONSUMER_GROUP_DESCRIBE, group_ids=(group,),
                                                             include_authorized_operations=False))
    for version in (5, 6):
        await oracle.call(ApiKey.DESCRIBE_GROUPS, version, req(ApiKey.DESCRIBE_GROUPS, groups=(group,),
                                                               include_authorized_operations=False))
    await oracle.call(ApiKey.JOIN_GROUP, 9, join_body(group), what="a classic member")
    part = sub(ApiKey.OFFSET_COMMIT, "OffsetCommitRequestPartition", partition_index=0, committed_offset=1,
               committed_leader_epoch=-1, committed_metadata="")
    commit = req(ApiKey.OFFSET_COMMIT, group_id=group, generation_id_or_member_epoch=-1, member_id="",
                 group_instance_id=None, retention_time_ms=-1,
                 topics=(sub(ApiKey.OFFSET_COMMIT, "OffsetCommitRequestTopic", name=topic, partitions=(part,)),))
    await oracle.call(ApiKey.OFFSET_COMMIT, 8, commit, what="a simple commit")
    fetch = sub(ApiKey.OFFSET_FETCH, "OffsetFetchRequestTopics", name=topic, partition_indexes=(0,))
    for member_id, epoch in ((None, -1), (MEMBER, 3)):
        group_entry = sub(ApiKey.OFFSET_FETCH, "OffsetFetchRequestGroup", group_id=group, member_id=member_id,
                          member_epoch=epoch, topics=(fetch,))
        await oracle.call(ApiKey.OFFSET_FETCH, 9, req(ApiKey.OFFSET_FETCH, groups=(group_entry,), require_stable=False),
                          what="offsets of a share group")
    # a classic group's id is not a share group's
    classic = unique(request, "-classic")
    commit = dataclasses.replace(commit, group_id=classic)
    await oracle.call(ApiKey.OFFSET_COMMIT, 8, commit, what="a simple group")
    await oracle.call(HEARTBEAT, 1, beat(classic, topics=(topic,)), what="a share member of a classic group")


SHARE_CONFIGS = ("share.session.timeout.ms", "share.heartbeat.interval.ms", "share.record.lock.duration.ms",
                 "share.delivery.count.limit", "share.partition.max.record.locks", "share.auto.offset.reset",
                 "share.isolation.level", "share.renew.acknowledge.enable", "share.assignment.interval.ms")


async def test_share_group_configs(oracle, request):
    from tests.oracle.test_admin import GROUP, IAC, SET, described, describe, incremental
    group = unique(request)
    await described(oracle, 4, describe((GROUP, group, SHARE_CONFIGS), synonyms=True), "a share group's configs")
    cases = {
        "earliest": [("share.auto.offset.reset", SET, "earliest")],
        "by duration": [("share.auto.offset.reset", SET, "by_duration:PT1H")],
        "a bad reset": [("share.auto.offset.reset", SET, "sometimes")],
        "an upper-case reset": [("share.auto.offset.reset", SET, "EARLIEST")],
        "none": [("share.auto.offset.reset", SET, "none")],
        "a negative duration": [("share.auto.offset.reset", SET, "by_duration:-PT1H")],
        "a duration with a negative part": [("share.auto.offset.reset", SET, "by_duration:P1DT-25H")],
        "a duration with a sign inside": [("share.auto.offset.reset", SET, "by_duration:PT+90M")],
        "a duration in lower case": [("share.auto.offset.reset", SET, "by_duration:pt2h")],
        "read_committed": [("share.isolation.level", SET, "read_committed")],
        "a bad isolation level": [("share.isolation.level", SET, "READ_COMMITTED")],
        "a delivery limit below the broker's least": [("share.delivery.count.limit", SET, "1")],
        "a delivery limit above its bound": [("share.delivery.count.limit", SET, "11")],
        "a lock too short": [("share.record.lock.duration.ms", SET, "999")],
        "a lock under the broker's minimum": [("share.record.lock.duration.ms", SET, "1000")],
        "few record locks": [("share.partition.max.record.locks", SET, "50")],
        "a session shorter than the heartbeat": [("share.session.timeout.ms", SET, "1000"),
                                                 ("share.heartbeat.interval.ms", SET, "2000")],
        "renewal off": [("share.renew.acknowledge.enable", SET, "no")],
        "an assignment interval": [("share.assignment.interval.ms", SET, "20000")],
    }
    for what, changes in cases.items():
        await oracle.call(IAC, 1, incremental((GROUP, group, changes), validate_only=True), what=what)
    await oracle.call(IAC, 1, incremental((GROUP, group, [("share.auto.offset.reset", SET, "earliest"),
                                                          ("share.delivery.count.limit", SET, "3")])), what="set")
    await described(oracle, 4, describe((GROUP, group, SHARE_CONFIGS), synonyms=True), "after the change")
