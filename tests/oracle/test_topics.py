"""Metadata, CreateTopics, DeleteTopics and CreatePartitions against Apache Kafka 4.3.1: every
version we serve, with Kafka's validation messages. Each answer is compared field by field."""

import dataclasses
import uuid

import pytest

from protocol.api_keys import ApiKey
from tests.oracle.steps import create_topic, req, sub, unique, versions, wait_for_leaders

M, CT, DT, CP = ApiKey.METADATA, ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS, ApiKey.CREATE_PARTITIONS
INVALID_NAMES = ("bad name!", ".", "..", "x" * 250)


def named(*names, ids=()):
    return tuple(sub(M, "MetadataRequestTopic", name=n) for n in names) + tuple(
        sub(M, "MetadataRequestTopic", name=None, topic_id=i) for i in ids)


def metadata(version, topics, allow=False, **fields):
    """A Metadata request; from v4 it says whether it may auto-create (before, it always may)."""
    return req(M, topics=topics, **({"allow_auto_topic_creation": allow} if version >= 4 else {}), **fields)


def only(answer, prefix: str):
    """An all-topics answer with only this test's topics, by name: others' and the internal
    topics may exist on either broker, and Kafka lists them in its HashMap's order."""
    return dataclasses.replace(answer, topics=tuple(sorted(
        (t for t in answer.topics if (t.name or "").startswith(prefix)), key=lambda t: t.name)))


async def topic_ids(oracle, name):
    """Each broker's id of topic ``name``."""
    ours, kafka = await oracle.both(M, 12, metadata(12, named(name)))
    return ours.topics[0].topic_id, kafka.topics[0].topic_id


@pytest.mark.parametrize("version", versions(M))
async def test_metadata_by_name(oracle, request, version):
    topic = unique(request)
    await create_topic(oracle, topic, partitions=3)
    await oracle.call(M, version, metadata(version, named(topic)), what="one topic")
    await oracle.call(M, version, metadata(version, named(topic, topic)), what="the same topic twice")
    if version >= 4:
        await oracle.call(M, version, metadata(version, named(topic + "-unknown")),
                          what="an unknown topic, no auto-creation")
        await oracle.call(M, version, metadata(version, named(*INVALID_NAMES[:3])),
                          what="invalid names, no auto-creation")
    if version >= 8:
        await oracle.call(M, version, metadata(version, named(topic), include_topic_authorized_operations=True),
                          what="with the topic's authorized operations")
    if 8 <= version <= 10:
        await oracle.call(M, version, metadata(version, named(topic), include_cluster_authorized_operations=True),
                          what="with the cluster's authorized operations")


@pytest.mark.parametrize("version", versions(M))
async def test_metadata_auto_creation(oracle, request, version):
    topic = unique(request)
    # v0-3 always allow auto-creation; v4+ ask for it
    await oracle.call(M, version, metadata(version, named(topic), allow=True), what="auto-creates")
    await wait_for_leaders(oracle, topic, 1)
    await oracle.call(M, version, metadata(version, named(topic), allow=True), what="now it exists")
    await oracle.call(M, version, metadata(version, named(INVALID_NAMES[0]), allow=True),
                      what="an invalid name with auto-creation")
    # Not compared: Metadata of __consumer_offsets. Kafka describes its 50 partitions (is_internal);
    # in groupbroker it is the group coordinator's own log, no topic: UNKNOWN_TOPIC_OR_PARTITION.


@pytest.mark.parametrize("version", versions(M))
async def test_metadata_all_topics(oracle, request, version):
    prefix = unique(request)
    await create_topic(oracle, prefix + "-a", partitions=2)
    await create_topic(oracle, prefix + "-b")
    every = () if version == 0 else None
    ours, kafka = await oracle.both(M, version, metadata(version, every))
    oracle.compare(M, version, only(ours, prefix), only(kafka, prefix), what="all topics")
    if version >= 1:
        ours, kafka = await oracle.both(M, version, metadata(version, ()))
        oracle.compare(M, version, ours, kafka, what="no topics")


@pytest.mark.parametrize("version", [v for v in versions(M) if v >= 10])
async def test_metadata_by_id(oracle, request, version):
    topic = unique(request)
    await create_topic(oracle, topic, partitions=2)
    ours_id, kafka_id = await topic_ids(oracle, topic)
    body = metadata(version, named(ids=[ours_id]))
    if version < 12:
        await oracle.call(M, version, metadata(version, (sub(M, "MetadataRequestTopic", name=topic,
                                                             topic_id=uuid.uuid4()),)),
                          what="a topic id before v12")
        return
    ours, kafka = await oracle.both(M, version, body)
    theirs = await oracle.ours.client.call(M, version, body)
    kafka = await oracle.kafka.client.call(M, version, metadata(version, named(ids=[kafka_id])))
    oracle.compare(M, version, theirs, kafka, what="by id")
    await oracle.call(M, version, metadata(version, named(ids=[uuid.UUID(int=7)])), what="an unknown id")


# --- CreateTopics ---------------------------------------------------------------------------

def creatable(name, partitions=1, replication=1, configs=(), assignments=()):
    return sub(CT, "CreatableTopic", name=name, num_partitions=partitions, replication_factor=replication,
               assignments=tuple(sub(CT, "CreatableReplicaAssignment", partition_index=i, broker_ids=tuple(b))
                                 for i, b in enumerate(assignments)),
               configs=tuple(sub(CT, "CreatableTopicConfig", name=k, value=v) for k, v in configs))


def create(*topics, validate_only=False):
    return req(CT, topics=topics, timeout_ms=30000, validate_only=validate_only)


@pytest.mark.parametrize("version", versions(CT))
async def test_create_topics(oracle, request, version):
    base = unique(request)
    await oracle.call(CT, version, create(creatable(base + "-v", 2), validate_only=True), what="validate only")
    await oracle.call(CT, version, create(creatable(base, 2, configs=[("cleanup.policy", "compact"),
                                                                      ("retention.ms", "1000")])),
                      what="with configs")
    await wait_for_leaders(oracle, base, 2)
    await oracle.call(CT, version, create(creatable(base, 2)), what="already exists")
    await oracle.call(CT, version, create(creatable(base + "-d", -1, -1)), what="the default counts")
    await oracle.call(CT, version, create(creatable(base + "-v", 2), validate_only=True),
                      what="validate only again: nothing was made")


@pytest.mark.parametrize("version", versions(CT))
async def test_create_topics_refused(oracle, request, version):
    base = unique(request)
    for name in INVALID_NAMES + ("",):
        await oracle.call(CT, version, create(creatable(name)), what=f"invalid name {name[:10]!r}")
    await oracle.call(CT, version, create(creatable(base + "-p0", 0)), what="no partitions")
    await oracle.call(CT, version, create(creatable(base + "-pn", -5)), what="negative partitions")
    await oracle.call(CT, version, create(creatable(base + "-r0", 1, 0)), what="replication factor 0")
    await oracle.call(CT, version, create(creatable(base + "-r3", 1, 3)), what="more replicas than brokers")
    await oracle.call(CT, version, create(creatable(base + "-rn", 1, -3)), what="replication factor -3")
    await oracle.call(CT, version, create(creatable(base + "-c", configs=[("no.such.config", "1")])),
                      what="an unknown config")
    await oracle.call(CT, version, create(creatable(base + "-c", configs=[("retention.ms", "soon")])),
                      what="a config of the wrong type")
    await oracle.call(CT, version, create(creatable(base + "-c", configs=[("cleanup.policy", "shred")])),
                      what="a config value out of range")
    await oracle.call(CT, version, create(creatable(base + "-c", configs=[("retention.ms", None)])),
                      what="a null config value")
    await oracle.call(CT, version, create(creatable(base + "-dup"), creatable(base + "-dup")),
                      what="the same name twice")
    await oracle.call(CT, version, create(creatable(base + "-m", -1, -1, assignments=[[1], [1]])),
                      what="a manual assignment")
    await oracle.call(CT, version, create(creatable(base + "-m2", 2, -1, assignments=[[1]])),
                      what="a manual assignment with a partition count")
    await oracle.call(CT, version, create(creatable(base + "-m3", -1, 1, assignments=[[1]])),
                      what="a manual assignment with a replication factor")
    await oracle.call(CT, version, create(creatable(base + "-m4", -1, -1, assignments=[[5]])),
                      what="a manual assignment naming an unknown broker")
    await oracle.call(CT, version, create(creatable(base + "-m5", -1, -1, assignments=[[1, 1]])),
                      what="a manual assignment naming a broker twice")
    await oracle.call(CT, version, create(creatable(base + "-m6", -1, -1, assignments=[[]])),
                      what="a manual assignment of no brokers")
    await oracle.call(CT, version, create(creatable("__consumer_offsets")), what="an internal topic")


# --- DeleteTopics ---------------------------------------------------------------------------

def delete(version, *names, ids=()):
    if version >= 6:
        return req(DT, timeout_ms=30000, topics=tuple(sub(DT, "DeleteTopicState", name=n) for n in names)
                   + tuple(sub(DT, "DeleteTopicState", name=None, topic_id=i) for i in ids))
    return req(DT, timeout_ms=30000, topic_names=names)


@pytest.mark.parametrize("version", versions(DT))
async def test_delete_topics(oracle, request, version):
    topic = unique(request)
    await create_topic(oracle, topic)
    await oracle.call(DT, version, delete(version, topic), what="by name")
    await oracle.call(DT, version, delete(version, topic + "-unknown"), what="unknown name")
    await oracle.call(DT, version, delete(version, "bad name!"), what="an invalid name")


@pytest.mark.parametrize("version", [v for v in versions(DT) if v >= 6])
async def test_delete_topics_by_id(oracle, request, version):
    topic = unique(request)
    await create_topic(oracle, topic)
    ours_id, kafka_id = await topic_ids(oracle, topic)
    ours = await oracle.ours.client.call(DT, version, delete(version, ids=[ours_id]))
    kafka = await oracle.kafka.client.call(DT, version, delete(version, ids=[kafka_id]))
    oracle.compare(DT, version, ours, kafka, what="by id")
    await oracle.call(DT, version, delete(version, ids=[uuid.UUID(int=9)]), what="an unknown id")
    await oracle.call(DT, version, delete(version, ids=[uuid.UUID(int=0)]), what="the zero id")
    # Kafka shuffles DeleteTopics answers (ControllerApis.deleteTopics): compared as sets
    await oracle.call(DT, version, delete(version, topic, ids=[uuid.UUID(int=9)]),
                      what="a deleted name and an unknown id", unordered=("responses",))
    await create_topic(oracle, topic + "-2")
    await oracle.call(DT, version, delete(version, topic + "-2", topic + "-2", ids=[uuid.UUID(int=9)] * 2),
                      what="a name and an id twice", unordered=("responses",))
    ours_id, kafka_id = await topic_ids(oracle, topic + "-2")
    both = sub(DT, "DeleteTopicState", name=topic + "-2", topic_id=uuid.UUID(int=5))
    await oracle.call(DT, version, req(DT, timeout_ms=1000, topics=(both,)), what="a name and an id at once")
    ours = await oracle.ours.client.call(DT, version, delete(version, topic + "-2", ids=[ours_id]))
    kafka = await oracle.kafka.client.call(DT, version, delete(version, topic + "-2", ids=[kafka_id]))
    oracle.compare(DT, version, ours, kafka, what="a topic by its name and its id", unordered=("responses",))


# --- CreatePartitions -----------------------------------------------------------------------

def grow(*topics, validate_only=False):
    return req(CP, timeout_ms=30000, validate_only=validate_only, topics=tuple(
        sub(CP, "CreatePartitionsTopic", name=n, count=c, assignments=None if a is None else tuple(
            sub(CP, "CreatePartitionsAssignment", broker_ids=tuple(b)) for b in a)) for n, c, a in topics))


@pytest.mark.parametrize("version", versions(CP))
async def test_create_partitions(oracle, request, version):
    topic = unique(request)
    await create_topic(oracle, topic, partitions=2)
    await oracle.call(CP, version, grow((topic, 4, None), validate_only=True), what="validate only")
    await oracle.call(CP, version, grow((topic, 3, None)), what="one more")
    await wait_for_leaders(oracle, topic, 3)
    await oracle.call(CP, version, grow((topic, 3, None)), what="the same count")
    await oracle.call(CP, version, grow((topic, 1, None)), what="fewer")
    await oracle.call(CP, version, grow((topic + "-unknown", 3, None)), what="an unknown topic")
    await oracle.call(CP, version, grow((topic, 5, [[1]])), what="too few assignments")
    await oracle.call(CP, version, grow((topic, 4, [[7]])), what="an unknown broker")
    await oracle.call(CP, version, grow((topic, 4, [[1, 1]])), what="a broker twice")
    await oracle.call(CP, version, grow((topic, 4, [[]])), what="no brokers")
    await oracle.call(CP, version, grow((topic, 4, None), (topic, 5, None)), what="a topic twice")
    await oracle.call(CP, version, grow(("bad name!", 4, None)), what="an invalid name")
    await oracle.call(CP, version, grow((topic, 4, [[1]])), what="with an assignment")
