"""Streams groups (KIP-1071) against Apache Kafka: StreamsGroupHeartbeat's validation and errors
in Kafka's order, the topology stored and configured against the topics (missing source topics,
internal topics created with the partition counts Kafka derives, copartitioning), the sticky
task assignor's tasks and standbys, revoke-before-assign reconciliation, leaving,
StreamsGroupDescribe, and the other group APIs meeting a streams group."""

import dataclasses

import trio

from protocol.api_keys import ApiKey
from protocol.wire import ZERO_UUID
from tests.oracle.steps import create_topic, join_body, known_to_groups, req, sub, unique

HEARTBEAT, DESCRIBE = ApiKey.STREAMS_GROUP_HEARTBEAT, ApiKey.STREAMS_GROUP_DESCRIBE
MEMBERS = ("Xr6q0AbXT2u8r4X0w1n9cA", "Ys7r1BcYU3v9s5Y1x2o0dB", "Zt8s2CdZV4w0t6Z2y3p1eC")
PROCESSES = ("8a1e6f4c-0d3b-4b8e-9f7a-2c5d1e0b3a11", "5b2f7a5d-1e4c-4c9f-8a6b-3d6e2f1c4b22",
             "2c3a8b6e-2f5d-4dab-9b7c-4e7f3a2d5c33")


def info(name: str, partitions: int = 0, configs=()):
    return sub(HEARTBEAT, "TopicInfo", name=name, partitions=partitions, replication_factor=0,
               topic_configs=tuple(sub(HEARTBEAT, "KeyValue", key=k, value=v) for k, v in configs))


def subtopology(sid: str, sources=(), changelogs=(), sinks=(), repartitions=(), copartition=(), regex=()):
    return sub(HEARTBEAT, "Subtopology", subtopology_id=sid, source_topics=tuple(sources),
               source_topic_regex=tuple(regex), state_changelog_topics=tuple(changelogs),
               repartition_sink_topics=tuple(sinks), repartition_source_topics=tuple(repartitions),
               copartition_groups=tuple(sub(HEARTBEAT, "CopartitionGroup", source_topics=s, source_topic_regex=(),
                                            repartition_source_topics=r) for s, r in copartition))


def word_count(app: str, topic: str, epoch: int = 0):
    """Kafka Streams' word count: a stateless subtopology repartitions by word, a stateful one
    counts (its store's changelog)."""
    return sub(HEARTBEAT, "Topology", epoch=epoch, subtopologies=(
        subtopology("0", sources=(topic,), sinks=(f"{app}-by-word-repartition",)),
        subtopology("1", repartitions=(info(f"{app}-by-word-repartition", configs=(("cleanup.policy", "delete"),)),),
                    changelogs=(info(f"{app}-counts-changelog", configs=(("cleanup.policy", "compact"),)),))))


def tasks(*pairs):
    return tuple(sub(HEARTBEAT, "TaskIds", subtopology_id=s, partitions=tuple(ps)) for s, ps in pairs)


def beat(group: str, member: int = 0, epoch: int = 0, topology=None, *, joining=None, owned=None,
         endpoint_epoch: int = -1, **fields):
    """A heartbeat of member ``member``: a join (``epoch`` 0) sends its topology, its process and
    empty task lists; later ones its ``owned`` (active, standby, warm-up) tasks, or none."""
    joining = epoch == 0 if joining is None else joining
    body = dict(group_id=group, member_id=MEMBERS[member], member_epoch=epoch,
                endpoint_information_epoch=endpoint_epoch, instance_id=None, rack_id=None,
                rebalance_timeout_ms=30000 if joining else -1, topology=topology if joining else None,
                active_tasks=() if joining else None, standby_tasks=() if joining else None,
                warmup_tasks=() if joining else None, process_id=PROCESSES[member] if joining else None,
                user_endpoint=None, client_tags=None, task_offsets=None, task_end_offsets=None,
                shutdown_application=False)
    if owned is not None:
        body.update(active_tasks=tasks(*owned[0]), standby_tasks=tasks(*owned[1]), warmup_tasks=())
    body.update(fields)
    return req(HEARTBEAT, **body)


def describe(*groups: str):
    return req(DESCRIBE, group_ids=groups, include_authorized_operations=True)


#: lists whose order is Kafka's hash tables' (compared as sets)
UNORDERED = ("active_tasks", "standby_tasks", "warmup_tasks", "partitions_by_user_endpoint", "active_partitions",
             "standby_partitions", "members")


async def call(oracle, body, what: str = "", api=HEARTBEAT) -> dict:
    return await oracle.call(api, 0, body, what=what, unordered=UNORDERED)


async def test_heartbeat_validation(oracle, request):
    group, topic = unique(request), unique(request, "-t")
    app = group
    good = word_count(app, topic)
    cases = {
        "a static member": beat(group, topology=good, instance_id="i"),
        "task offsets": beat(group, topology=good, task_offsets=()),
        "task end offsets": beat(group, topology=good, task_end_offsets=()),
        "warm-up tasks": beat(group, topology=good, warmup_tasks=tasks(("0", (0,)))),
        "a source regex": beat(group, topology=sub(HEARTBEAT, "Topology", epoch=0, subtopologies=(
            subtopology("0", regex=("a.*",)),))),
        "an empty member id": beat(group, topology=good, member_id=""),
        "a blank member id": beat(group, topology=good, member_id="  "),
        "an empty group id": beat("", topology=good),
        "an empty rack": beat(group, topology=good, rack_id=""),
        "no rebalance timeout": beat(group, topology=good, rebalance_timeout_ms=-1),
        "active tasks when joining": beat(group, topology=good, active_tasks=tasks(("0", (0,)))),
        "no active tasks when joining": beat(group, topology=good, active_tasks=None),
        "no standby tasks when joining": beat(group, topology=good, standby_tasks=None),
        "no topology when joining": beat(group, topology=None, joining=True),
        "a changelog with partitions": beat(group, topology=sub(HEARTBEAT, "Topology", epoch=0, subtopologies=(
            subtopology("0", sources=(topic,), changelogs=(info(f"{app}-c-changelog", 3),)),))),
        "a static leave": beat(group, epoch=-2),
        "an epoch below -2": beat(group, epoch=-3),
        "some task lists only": beat(group, epoch=1, active_tasks=(), standby_tasks=None, warmup_tasks=None),
        "a topology after joining": dataclasses.replace(beat(group, epoch=1), topology=good),
        "an internal topic": beat(group, topology=word_count(app, "__consumer_offsets")),
        "an invalid topic name": beat(group, topology=word_count(app, "bad topic")),
        "an unknown group": beat(group, epoch=3),
        "a leave from an unknown group": beat(group, epoch=-1),
    }
    for what, body in cases.items():
        await call(oracle, body, what)
    await call(oracle, describe(group, ""), "unknown and empty group ids", DESCRIBE)


async def test_missing_topics_and_internal_topics(oracle, request):
    """A topology whose source topic is missing waits (MISSING_SOURCE_TOPICS); once it exists
    the broker creates the internal topics with the partition counts it derives, then assigns."""
    group, topic = unique(request), unique(request, "-t")
    first = await call(oracle, beat(group, topology=word_count(group, topic)), "the source topic is missing")
    assert first["status"][0]["status_code"] == 1, first
    await call(oracle, describe(group), "a group that is not ready", DESCRIBE)
    await create_topic(oracle, topic, 3)
    await known_to_groups(oracle, topic, 3)
    epoch = first["member_epoch"]
    answer = await settled_heartbeat(oracle, group, 0, epoch, "the internal topics are created and tasks assigned")
    assert answer["active_tasks"], answer
    await call(oracle, describe(group), "a stable group with its configured topology", DESCRIBE)
    for name in (f"{group}-by-word-repartition", f"{group}-counts-changelog"):
        answers = await oracle.both(ApiKey.METADATA, 12, req(ApiKey.METADATA, topics=(
            sub(ApiKey.METADATA, "MetadataRequestTopic", topic_id=ZERO_UUID, name=name),),
            allow_auto_topic_creation=False, include_topic_authorized_operations=False))
        assert [len(a.topics[0].partitions) for a in answers] == [3, 3], (name, answers)


async def settled_heartbeat(oracle, group: str, member: int, epoch: int, what: str, owned=None) -> dict:
    """Heartbeat until both brokers answer with tasks and no status but what the group keeps
    (internal topics are created, and known to the coordinator, a moment after the heartbeat
    that asked), then compare."""
    deadline = trio.current_time() + 10
    while True:
        ours, kafka = await oracle.both(HEARTBEAT, 0, beat(group, member, epoch, owned=owned))
        ready = all(a.error_code == 0 and a.active_tasks is not None and not a.status for a in (ours, kafka))
        if ready or trio.current_time() > deadline:
            return oracle.compare(HEARTBEAT, 0, ours, kafka, what=what, unordered=UNORDERED)
        epoch = max(epoch, min(ours.member_epoch, kafka.member_epoch))
        await trio.sleep(0.2)


def owned_of(answer: dict):
    return ([(t["subtopology_id"], t["partitions"]) for t in answer["active_tasks"] or ()],
            [(t["subtopology_id"], t["partitions"]) for t in answer["standby_tasks"] or ()])


async def test_members_share_the_tasks(oracle, request):
    """Three members of three processes, one standby: the sticky assignor's tasks, a member
    revoking before another gets its tasks, a leave, describe and list."""
    group, topic = unique(request), unique(request, "-t")
    await create_topic(oracle, topic, 4)
    await known_to_groups(oracle, topic, 4)
    for name in (f"{group}-by-word-repartition", f"{group}-counts-changelog"):
        await create_topic(oracle, name, 4)
        await known_to_groups(oracle, name, 4)
    configs = req(ApiKey.INCREMENTAL_ALTER_CONFIGS, resources=(sub(
        ApiKey.INCREMENTAL_ALTER_CONFIGS, "AlterConfigsResource", resource_type=32, resource_name=group, configs=(
            sub(ApiKey.INCREMENTAL_ALTER_CONFIGS, "AlterableConfig", name="streams.num.standby.replicas",
                config_operation=0, value="1"),)),), validate_only=False)
    await oracle.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, configs, what="one standby replica")
    answers = {}
    answers[0] = await call(oracle, beat(group, 0, topology=word_count(group, topic)), "the first member")
    assert answers[0]["error_code"] == 0 and len(answers[0]["active_tasks"]) == 2, answers[0]
    for m in (1, 2):
        answers[m] = await call(oracle, beat(group, m, topology=word_count(group, topic)), f"member {m} joins")
    for _ in range(4):                  # every member heartbeats with what it owns until all settle
        for m in (0, 1, 2):
            answer = await call(oracle, beat(group, m, answers[m]["member_epoch"], owned=owned_of(answers[m])),
                                f"member {m} reconciles")
            if answer["active_tasks"] is not None:
                answers[m] = answer
            else:
                answers[m]["member_epoch"] = answer["member_epoch"]
    described = await call(oracle, describe(group), "three members, one standby", DESCRIBE)
    assert described["groups"][0]["group_state"] == "Stable", described
    listed = await oracle.call(ApiKey.LIST_GROUPS, 5, req(ApiKey.LIST_GROUPS, states_filter=("stable",),
                                                            types_filter=("streams",)))
    assert group in [g["group_id"] for g in listed["groups"]], listed
    await call(oracle, beat(group, 1, -1), "a member leaves")
    await call(oracle, describe(group), "assigning after a leave", DESCRIBE)
    await oracle.call(ApiKey.DELETE_GROUPS, 2, req(ApiKey.DELETE_GROUPS, groups_names=(group,)),
                      what="a streams group with members is not deleted")
    for m in (0, 2):
        await call(oracle, beat(group, m, -1), "the others leave")
    await call(oracle, describe(group), "an empty streams group", DESCRIBE)
    await oracle.call(ApiKey.DELETE_GROUPS, 2, req(ApiKey.DELETE_GROUPS, groups_names=(group,)),
                      what="an empty streams group is deleted")
    await call(oracle, describe(group), "gone", DESCRIBE)


async def test_member_epochs_and_offsets(oracle, request):
    group, topic = unique(request), unique(request, "-t")
    await create_topic(oracle, topic, 2)
    await known_to_groups(oracle, topic, 2)
    stateless = sub(HEARTBEAT, "Topology", epoch=0, subtopologies=(subtopology("0", sources=(topic,)),))
    joined = await call(oracle, beat(group, 0, topology=stateless), "a stateless topology")
    epoch = joined["member_epoch"]
    owned = owned_of(joined)
    await call(oracle, beat(group, 0, epoch, owned=owned), "a plain heartbeat")
    await call(oracle, beat(group, 0, epoch + 1), "a future epoch: fenced")
    await call(oracle, beat(group, 0, epoch - 1, owned=owned), "the previous epoch")
    await call(oracle, beat(group, 0, epoch, owned=([("7", (0,))], [])), "an unknown subtopology")
    await call(oracle, beat(group, 0, epoch, owned=([("0", (5,))], [])), "a task beyond the topic")
    await call(oracle, beat(group, 1, 3), "an unknown member")
    await call(oracle, beat(group, 1, topology=sub(HEARTBEAT, "Topology", epoch=1, subtopologies=(
        subtopology("0", sources=(topic, f"{topic}-x")),))), "a different topology")
    part = lambda p: sub(ApiKey.OFFSET_COMMIT, "OffsetCommitRequestPartition", partition_index=p, committed_offset=1,
                         committed_leader_epoch=-1, committed_metadata="")
    topic_body = sub(ApiKey.OFFSET_COMMIT, "OffsetCommitRequestTopic", name=topic, partitions=(part(0), part(1)))
    for what, member, member_epoch, version in (("the member's epoch", MEMBERS[0], epoch, 9),
                                                ("a newer epoch", MEMBERS[0], epoch + 1, 9),
                                                ("an unknown member", MEMBERS[2], epoch, 9),
                                                ("an old version", MEMBERS[0], epoch, 8),
                                                ("an admin commit", "", -1, 9)):
        commit = req(ApiKey.OFFSET_COMMIT, group_id=group, generation_id_or_member_epoch=member_epoch,
                     member_id=member, group_instance_id=None, retention_time_ms=-1, topics=(topic_body,))
        await oracle.call(ApiKey.OFFSET_COMMIT, version, commit, what=f"a commit: {what}")
    fetch = req(ApiKey.OFFSET_FETCH, groups=(sub(ApiKey.OFFSET_FETCH, "OffsetFetchRequestGroup", group_id=group,
                                                 member_id=MEMBERS[0], member_epoch=epoch, topics=None),),
                require_stable=False)
    await oracle.call(ApiKey.OFFSET_FETCH, 9, fetch, what="a member's fetch")
    ours, kafka = await oracle.both(ApiKey.LIST_GROUPS, 5, req(ApiKey.LIST_GROUPS, states_filter=(), types_filter=()))
    mine = [dataclasses.replace(a, groups=tuple(g for g in a.groups if g.group_id == group)) for a in (ours, kafka)]
    listed = oracle.compare(ApiKey.LIST_GROUPS, 5, *mine, what="a streams group with commits, listed once")
    assert [g["group_type"] for g in listed["groups"]] == ["streams"], listed
    await oracle.call(ApiKey.DESCRIBE_GROUPS, 5, req(ApiKey.DESCRIBE_GROUPS, groups=(group,),
                                                     include_authorized_operations=False),
                      what="no classic group beside it")
    delete = req(ApiKey.OFFSET_DELETE, group_id=group, topics=(sub(
        ApiKey.OFFSET_DELETE, "OffsetDeleteRequestTopic", name=topic, partitions=(
            sub(ApiKey.OFFSET_DELETE, "OffsetDeleteRequestPartition", partition_index=0),)),))
    await oracle.call(ApiKey.OFFSET_DELETE, 0, delete, what="a source topic's offsets while members run")


async def test_other_group_apis_meet_a_streams_group(oracle, request):
    group, topic = unique(request), unique(request, "-t")
    await create_topic(oracle, topic, 1)
    await known_to_groups(oracle, topic, 1)
    stateless = sub(HEARTBEAT, "Topology", epoch=0, subtopologies=(subtopology("0", sources=(topic,)),))
    await call(oracle, beat(group, 0, topology=stateless), "a streams group")
    consumer = req(ApiKey.CONSUMER_GROUP_HEARTBEAT, group_id=group, member_id=MEMBERS[1], member_epoch=0,
                   instance_id=None, rack_id=None, rebalance_timeout_ms=30000, subscribed_topic_names=(topic,),
                   subscribed_topic_regex=None, server_assignor=None, topic_partitions=())
    await oracle.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, consumer, what="a consumer member")
    share = req(ApiKey.SHARE_GROUP_HEARTBEAT, group_id=group, member_id=MEMBERS[1], member_epoch=0, rack_id=None,
                subscribed_topic_names=(topic,))
    await oracle.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, share, what="a share member")
    for version in (5, 6):
        await oracle.call(ApiKey.DESCRIBE_GROUPS, version, req(ApiKey.DESCRIBE_GROUPS, groups=(group,),
                                                               include_authorized_operations=False))
    await oracle.call(ApiKey.JOIN_GROUP, 9, join_body(group), what="a classic member of a live streams group")
    await call(oracle, beat(group, 0, -1), "the member leaves")
    await oracle.call(ApiKey.JOIN_GROUP, 9, join_body(group), what="a classic member replaces the empty group")
    await call(oracle, beat(group, 0, topology=stateless), "a streams member meets the classic group")
    await call(oracle, describe(group), what="a classic group", api=DESCRIBE)
    await oracle.call(ApiKey.CONSUMER_GROUP_DESCRIBE, 1, req(ApiKey.CONSUMER_GROUP_DESCRIBE, group_ids=(group,),
                                                             include_authorized_operations=False),
                      what="a classic group described as a consumer group")


async def test_consumer_apis_meet_a_live_streams_group(oracle, request):
    group, topic = unique(request), unique(request, "-t")
    await create_topic(oracle, topic, 1)
    await known_to_groups(oracle, topic, 1)
    stateless = sub(HEARTBEAT, "Topology", epoch=0, subtopologies=(subtopology("0", sources=(topic,)),))
    await call(oracle, beat(group, 0, topology=stateless), "a streams group")
    await oracle.call(ApiKey.CONSUMER_GROUP_DESCRIBE, 1, req(ApiKey.CONSUMER_GROUP_DESCRIBE, group_ids=(group,),
                                                             include_authorized_operations=False))
    await oracle.call(ApiKey.SHARE_GROUP_DESCRIBE, 1, req(ApiKey.SHARE_GROUP_DESCRIBE, group_ids=(group,),
                                                          include_authorized_operations=False))
    for api, version, body in ((ApiKey.HEARTBEAT, 4, req(ApiKey.HEARTBEAT, group_id=group, generation_id=1,
                                                         member_id=MEMBERS[0], group_instance_id=None)),
                               (ApiKey.SYNC_GROUP, 5, req(ApiKey.SYNC_GROUP, group_id=group, generation_id=1,
                                                          member_id=MEMBERS[0], group_instance_id=None,
                                                          protocol_type="consumer", protocol_name="range",
                                                          assignments=()))):
        await oracle.call(api, version, body, what="a classic API")


STREAMS_CONFIGS = ("streams.session.timeout.ms", "streams.heartbeat.interval.ms", "streams.num.standby.replicas",
                   "streams.initial.rebalance.delay.ms", "streams.assignment.interval.ms")


async def test_streams_group_configs(oracle, request):
    from tests.oracle.test_admin import GROUP, IAC, SET, described, describe, incremental
    group = unique(request)
    await described(oracle, 4, describe((GROUP, group, STREAMS_CONFIGS), synonyms=True), "a streams group's configs")
    cases = {
        "two standbys": [("streams.num.standby.replicas", SET, "2")],
        "more standbys than the broker allows": [("streams.num.standby.replicas", SET, "3")],
        "negative standbys": [("streams.num.standby.replicas", SET, "-1")],
        "a session under the broker's minimum": [("streams.session.timeout.ms", SET, "500")],
        "a session above the broker's maximum": [("streams.session.timeout.ms", SET, "70000")],
        "a heartbeat under the broker's minimum": [("streams.heartbeat.interval.ms", SET, "50")],
        "a session shorter than the heartbeat": [("streams.session.timeout.ms", SET, "2000"),
                                                 ("streams.heartbeat.interval.ms", SET, "3000")],
        "no initial delay": [("streams.initial.rebalance.delay.ms", SET, "0")],
        "a negative initial delay": [("streams.initial.rebalance.delay.ms", SET, "-1")],
        "an assignment interval above its bound": [("streams.assignment.interval.ms", SET, "20000")],
        "not a number": [("streams.num.standby.replicas", SET, "one")],
        "a name Kafka only keeps as a constant": [("streams.assignor.offload.enable", SET, "true")],
    }
    for what, changes in cases.items():
        await oracle.call(IAC, 1, incremental((GROUP, group, changes), validate_only=True), what=what)
    await oracle.call(IAC, 1, incremental((GROUP, group, [("streams.num.standby.replicas", SET, "1"),
                                                          ("streams.heartbeat.interval.ms", SET, "1000")])),
                      what="set")
    await described(oracle, 4, describe((GROUP, group, STREAMS_CONFIGS), synonyms=True), "after the change")


def endpoint(port: int):
    return sub(HEARTBEAT, "Endpoint", host="localhost", port=port)


async def test_endpoints_delays_and_shutdown(oracle, request):
    """Interactive queries' endpoints (each member's partitions, the endpoint information epoch),
    the initial rebalance delay and the assignment interval of a group's configs, and a member's
    request to shut the whole application down."""
    from tests.oracle.test_admin import GROUP, IAC, SET, incremental
    group, topic = unique(request), unique(request, "-t")
    await create_topic(oracle, topic, 3)
    await known_to_groups(oracle, topic, 3)
    await oracle.call(IAC, 1, incremental((GROUP, group, [("streams.initial.rebalance.delay.ms", SET, "1500"),
                                                          ("streams.assignment.interval.ms", SET, "2000")])))
    stateless = sub(HEARTBEAT, "Topology", epoch=0, subtopologies=(subtopology("0", sources=(topic,)),))
    first = await call(oracle, beat(group, 0, topology=stateless, user_endpoint=endpoint(8080)),
                       "a member with an endpoint, the assignment delayed")
    assert [s["status_code"] for s in first["status"]] == [5], first
    await call(oracle, beat(group, 1, topology=stateless, user_endpoint=endpoint(8081)), "another, still delayed")
    await trio.sleep(2)
    epochs = {}
    for m in (0, 1):
        answer = await call(oracle, beat(group, m, 1, owned=([], []), endpoint_epoch=0),
                            f"member {m} after the delay: tasks and endpoints")
        epochs[m] = answer
    await call(oracle, beat(group, 0, epochs[0]["member_epoch"], owned=owned_of(epochs[0]),
                            endpoint_epoch=epochs[1]["endpoint_information_epoch"]), "the endpoints known")
    await call(oracle, beat(group, 2, topology=stateless), "a third member within the assignment interval")
    await call(oracle, beat(group, 1, epochs[1]["member_epoch"], owned=owned_of(epochs[1]), shutdown_application=True),
               "a member asks for the application's shutdown")
    await call(oracle, beat(group, 0, epochs[0]["member_epoch"], owned=owned_of(epochs[0])),
               "every member is told")
    await call(oracle, beat(group, 2, -1), "a member leaves")


async def test_an_endpoint_while_the_source_topics_are_missing(oracle, request):
    """Endpoints need the configured topology, which a topology waiting for its source topics
    does not have yet."""
    group, topic = unique(request), unique(request, "-t")
    stateless = sub(HEARTBEAT, "Topology", epoch=0, subtopologies=(subtopology("0", sources=(topic,)),))
    first = await call(oracle, beat(group, 0, topology=stateless, user_endpoint=endpoint(8080)),
                       "a member with an endpoint, its source topic missing")
    await call(oracle, beat(group, 1, topology=stateless, user_endpoint=endpoint(8081)), "another one")
    await call(oracle, beat(group, 0, first["member_epoch"], owned=([], [])), "the first again")


async def test_topologies_configured_against_the_topics(oracle, request):
    """What Kafka's InternalTopicManager decides of a topology: copartitioned topics that do not
    match, a repartition topic nobody writes, a loop, a repartition topic of a fixed count, an
    existing internal topic of another count, internal topics made with the counts derived."""
    base = unique(request)
    two, three = f"{base}-two", f"{base}-three"
    for topic, partitions in ((two, 2), (three, 3), (f"{base}-e-repartition", 5)):
        await create_topic(oracle, topic, partitions)
        await known_to_groups(oracle, topic, partitions)

    def topology(*subtopologies):
        return sub(HEARTBEAT, "Topology", epoch=0, subtopologies=subtopologies)
    cases = {
        "copartitioned sources of 2 and 3 partitions": ("a", topology(
            subtopology("0", sources=(two, three), copartition=(((0, 1), ()),)))),
        "a repartition source no subtopology writes": ("b", topology(
            subtopology("0", sources=(two,)), subtopology("1", repartitions=(info(f"{base}-b-repartition"),)))),
        "a loop of repartition topics": ("c", topology(
            subtopology("0", repartitions=(info(f"{base}-c1-repartition"),), sinks=(f"{base}-c2-repartition",)),
            subtopology("1", repartitions=(info(f"{base}-c2-repartition"),), sinks=(f"{base}-c1-repartition",)))),
        "a repartition topic of a fixed count, copartitioned with a source": ("d", topology(
            subtopology("0", sources=(three,), sinks=(f"{base}-d-repartition",)),
            subtopology("1", sources=(two,), repartitions=(info(f"{base}-d-repartition", 4),),
                        copartition=(((0,), (0,)),)))),
        "an existing internal topic of another count": ("e", topology(
            subtopology("0", sources=(three,), sinks=(f"{base}-e-repartition",)),
            subtopology("1", repartitions=(info(f"{base}-e-repartition"),)))),
        "internal topics to make, their counts derived": ("f", topology(
            subtopology("0", sources=(three,), sinks=(f"{base}-f-repartition",)),
            subtopology("1", repartitions=(info(f"{base}-f-repartition"),),
                        changelogs=(info(f"{base}-f-store-changelog"),)),
            subtopology("2", sources=(two,), changelogs=(info(f"{base}-f-other-changelog"),)))),
    }
    outcomes = []
    for what, (suffix, body) in cases.items():
        answer = await call(oracle, beat(f"{base}-{suffix}", topology=body), what)
        outcomes.append((answer["error_code"], [s["status_code"] for s in answer["status"]]))
    assert outcomes == [(0, [2]), (130, []), (130, []), (0, [2]), (0, [2]), (0, [3])], outcomes
    await call(oracle, describe(*(f"{base}-{suffix}" for suffix, _ in cases.values())), "the groups", DESCRIBE)


FOUR = (*MEMBERS, "Wq9t3DeWX5x1u7A3z4q2fD")


async def test_threads_of_two_processes_share_tasks_and_standbys(oracle, request):
    """Four members from two processes (two stream threads each) and two stateful subtopologies
    with one standby: the sticky assignor balances by process load, never puts a standby on the
    process of its active task, and breaks ties as Kafka's Java collections do."""
    group, topic, other = unique(request), unique(request, "-a"), unique(request, "-b")
    for name, partitions in ((topic, 6), (other, 3)):
        await create_topic(oracle, name, partitions)
        await known_to_groups(oracle, name, partitions)
    for name, partitions in ((f"{group}-s1-changelog", 6), (f"{group}-s2-changelog", 3)):
        await create_topic(oracle, name, partitions)
        await known_to_groups(oracle, name, partitions)
    from tests.oracle.test_admin import GROUP, IAC, SET, incremental
    await oracle.call(IAC, 1, incremental((GROUP, group, [("streams.num.standby.replicas", SET, "1")])))
    body = sub(HEARTBEAT, "Topology", epoch=0, subtopologies=(
        subtopology("0", sources=(topic,), changelogs=(info(f"{group}-s1-changelog"),)),
        subtopology("1", sources=(other,), changelogs=(info(f"{group}-s2-changelog"),))))
    process = {0: PROCESSES[0], 1: PROCESSES[0], 2: PROCESSES[1], 3: PROCESSES[1]}
    answers = {}
    for m in range(4):
        answers[m] = await call(oracle, req(HEARTBEAT, **{**vars_of(beat(group, 0, topology=body)),
                                                         "member_id": FOUR[m], "process_id": process[m]}),
                                f"member {m} of process {m // 2} joins")
    for _ in range(4):
        for m in range(4):
            held = owned_of(answers[m])
            answer = await call(oracle, req(HEARTBEAT, **{**vars_of(beat(group, 0, answers[m]["member_epoch"],
                                                                         owned=held)), "member_id": FOUR[m]}),
                                f"member {m} reconciles")
            if answer["active_tasks"] is not None:
                answers[m] = answer
            else:
                answers[m]["member_epoch"] = answer["member_epoch"]
    described = await oracle.call(DESCRIBE, 0, describe(group), what="two processes of two threads, one standby "
                                  "(members in Kafka's order)", unordered=tuple(u for u in UNORDERED if u != "members"))
    assert described["groups"][0]["group_state"] == "Stable", described


def vars_of(body) -> dict:
    """A request's fields, to build one like it."""
    import dataclasses
    return {f.name: getattr(body, f.name) for f in dataclasses.fields(body)}
