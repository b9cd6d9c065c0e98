"""Steps the differential tests share: request bodies by name, topics made on both brokers,
record batches built by a real client's code (kafka-python's), a classic member made stable."""

from __future__ import annotations

import contextlib
import re

import trio
from kafka.record.default_records import DefaultRecordBatchBuilder

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.messages import DATA, REQUESTS
from protocol.payloads import encode_payload
from protocol.registry import API_TABLE
from apache_kafka.artefacts import KafkaUnavailable
from apache_kafka.process import KafkaProcess
from broker.testing.launcher import BrokerProcess
from tests.support.differential import Alias, Differential, diff, sort_lists
from tests.support.processes import missing


@contextlib.contextmanager
def own_pair(home, settings: dict, features: dict[str, int] | None = None):
    """A groupbroker and a Kafka both started with ``settings``, for a module that needs its
    own pair (the session's ``oracle`` pair runs ORACLE_SETTINGS): (ours, kafka). ``features``
    are the levels Kafka is formatted with (KafkaProcess)."""
    try:
        kafka = KafkaProcess(home / "kafka", settings, features=features).start()
    except KafkaUnavailable as e:
        missing(str(e))
    ours_settings = dict(settings)
    for name in ("share.version", "streams.version", "transaction.version"):  # Kafka's format, our settings
        if features and name in features:
            ours_settings[f"groupbroker.feature.{name}"] = str(features[name])
    try:
        ours = BrokerProcess(home / "ours", home / "ours.log", ours_settings).start()
        try:
            yield ours, kafka
        finally:
            ours.stop()
    finally:
        kafka.stop()


@contextlib.asynccontextmanager
async def connected(pair):
    """A Differential over one of :func:`own_pair`'s pairs."""
    ours, kafka = pair
    oracle = await Differential.open(ours.port, kafka.port)
    try:
        yield oracle
    finally:
        await oracle.aclose()


def req(api: ApiKey, **fields):
    """A request body of ``api`` with ``fields`` (the rest at their defaults)."""
    return REQUESTS[api].cls(**fields)


def sub(api: ApiKey, struct: str, **fields):
    """A struct of ``api``'s request, e.g. ``sub(ApiKey.JOIN_GROUP, "JoinGroupRequestProtocol", ...)``."""
    return REQUESTS[api].class_of(struct)(**fields)


def unique(request, suffix: str = "") -> str:
    """A name for this test's groups and topics: the same on both brokers, new in each test."""
    name = re.sub(r"[^a-zA-Z0-9._-]", "-", request.node.name)[-180:]
    return f"{name}{suffix}"


def batch(values, *, timestamp: int = 1_700_000_000_000, producer_id: int = -1, epoch: int = -1,
          sequence: int = -1, transactional: bool = False, keys=None) -> bytes:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=transactional,
                                        producer_id=producer_id, producer_epoch=epoch,
                                        base_sequence=sequence, batch_size=1 << 20)
    for i, value in enumerate(values):
        builder.append(i, timestamp=timestamp + i, key=keys[i] if keys else None, value=value, headers=[])
    return bytes(builder.build())


async def create_topic(oracle: Differential, name: str, partitions: int = 1, configs=()) -> None:
    """CreateTopics on both (compared), then wait until each broker leads every partition."""
    topic = sub(ApiKey.CREATE_TOPICS, "CreatableTopic", name=name, num_partitions=partitions,
                replication_factor=1, configs=tuple(
                    sub(ApiKey.CREATE_TOPICS, "CreatableTopicConfig", name=k, value=v) for k, v in configs))
    answer = await oracle.call(ApiKey.CREATE_TOPICS, 7, req(ApiKey.CREATE_TOPICS, topics=(topic,),
                                                            timeout_ms=30000))
    assert answer["topics"][0]["error_code"] == ErrorCode.NONE, answer
    await wait_for_leaders(oracle, name, partitions)


async def wait_for_leaders(oracle: Differential, name: str, partitions: int) -> None:
    """Each broker names a leader for every partition, and the leader serves it: Kafka's metadata
    names a new partition's leader a moment before the leader has made its log (a Produce gets
    NOT_LEADER_OR_FOLLOWER meanwhile), so ListOffsets must answer each partition too."""
    meta = req(ApiKey.METADATA, topics=(sub(ApiKey.METADATA, "MetadataRequestTopic", name=name),),
               allow_auto_topic_creation=False)
    latest = req(ApiKey.LIST_OFFSETS, replica_id=-1, topics=(sub(
        ApiKey.LIST_OFFSETS, "ListOffsetsTopic", name=name, partitions=tuple(
            sub(ApiKey.LIST_OFFSETS, "ListOffsetsPartition", partition_index=p, timestamp=-1)
            for p in range(partitions))),))
    with trio.fail_after(30):
        for side in oracle.sides:
            while True:
                answer = await side.client.call(ApiKey.METADATA, 12, meta)
                parts = answer.topics[0].partitions
                if (answer.topics[0].error_code == ErrorCode.NONE and len(parts) == partitions
                        and all(p.leader_id >= 0 for p in parts)):
                    break
                await trio.sleep(0.05)
            while any(p.error_code for p in (await side.client.call(ApiKey.LIST_OFFSETS, 5, latest)).topics[0].partitions):
                await trio.sleep(0.02)


async def known_to_groups(oracle: Differential, topic: str, partitions: int) -> None:
    """Wait until Kafka's group coordinator knows ``topic``. Its metadata image follows the
    broker's metadata cache (which :func:`create_topic` waits for) a moment later, and a consumer
    group subscribing before then is assigned nothing (groupbroker's shards see a topic at once).
    A scratch member of a scratch group (on Kafka only) joins until it is assigned the topic,
    then leaves."""
    kafka = oracle.kafka.client
    with trio.fail_after(30):
        for attempt in range(1_000_000):
            group = f"{topic}-scratch-{attempt}"
            joined = await kafka.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, req(
                ApiKey.CONSUMER_GROUP_HEARTBEAT, group_id=group, member_id="scratch-member-0000001",
                member_epoch=0, rebalance_timeout_ms=30000, subscribed_topic_names=(topic,),
                topic_partitions=()))
            assert joined.error_code == ErrorCode.NONE, joined
            await kafka.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, req(
                ApiKey.CONSUMER_GROUP_HEARTBEAT, group_id=group, member_id="scratch-member-0000001",
                member_epoch=-1))
            assigned = sum(len(t.partitions) for t in joined.assignment.topic_partitions)
            if assigned == partitions:
                return
            await trio.sleep(0.02)


def produce_body(topic: str, partition: int, data: bytes, *, acks: int = -1,
                 transactional_id: str | None = None):
    """A Produce of ``data`` (whole batches) to one partition."""
    return req(ApiKey.PRODUCE, transactional_id=transactional_id, acks=acks, timeout_ms=30000, topic_data=(
        sub(ApiKey.PRODUCE, "TopicProduceData", name=topic, partition_data=(
            sub(ApiKey.PRODUCE, "PartitionProduceData", index=partition, records=data),)),))


def subscription(*topics: str) -> bytes:
    """A consumer's JoinGroup metadata. Kafka reads it in a "consumer" group: bytes that are not a
    ConsumerProtocolSubscription make its join phase fail to complete, and the JoinGroup is never
    answered (docs/kafka-differences.md)."""
    subscription = DATA["ConsumerProtocolSubscription"]
    return encode_payload(subscription, 0, subscription.cls(topics=topics or ("t",)))


def join_body(group: str, member_id: str = "", *, instance_id: str | None = None, protocols=("range",),
              session_timeout_ms: int = 30000, rebalance_timeout_ms: int = 30000,
              protocol_type: str = "consumer", reason: str | None = None, topics=("t",)):
    return req(ApiKey.JOIN_GROUP, group_id=group, session_timeout_ms=session_timeout_ms,
               rebalance_timeout_ms=rebalance_timeout_ms, member_id=member_id, group_instance_id=instance_id,
               protocol_type=protocol_type, reason=reason, protocols=tuple(
                   sub(ApiKey.JOIN_GROUP, "JoinGroupRequestProtocol", name=p, metadata=subscription(*topics))
                   for p in protocols))


async def stable_member(oracle: Differential, group: str, *, instance_id: str | None = None,
                        protocols=("range",), join_version: int = 9, sync_version: int = 5,
                        topics=("t",)) -> tuple[Alias, int]:
    """A lone member joins ``group`` and syncs (each answer compared); its alias and generation."""
    first = await oracle.call(ApiKey.JOIN_GROUP, join_version, join_body(group, instance_id=instance_id,
                                                                         protocols=protocols, topics=topics))
    if first["error_code"] == ErrorCode.MEMBER_ID_REQUIRED:
        first = await oracle.call(ApiKey.JOIN_GROUP, join_version, join_body(
            group, Alias(first["member_id"]), instance_id=instance_id, protocols=protocols, topics=topics))
    assert first["error_code"] == ErrorCode.NONE, first
    member, generation = Alias(first["member_id"]), first["generation_id"]
    synced = await oracle.call(ApiKey.SYNC_GROUP, sync_version, req(
        ApiKey.SYNC_GROUP, group_id=group, generation_id=generation, member_id=member,
        group_instance_id=instance_id, protocol_type="consumer", protocol_name=protocols[0],
        assignments=(sub(ApiKey.SYNC_GROUP, "SyncGroupRequestAssignment", member_id=member,
                         assignment=b"assigned"),)))
    assert synced["error_code"] == ErrorCode.NONE, synced
    return member, generation


def versions(api: ApiKey) -> range:
    """Every version of ``api`` we serve (protocol.registry.API_TABLE)."""
    spec = API_TABLE[api]
    return range(spec.min_version, spec.max_version + 1)


async def settled(oracle: Differential, api_key: int, version: int, body, *, what: str = "", timeout: float = 5.0,
                  prepare=lambda answer: answer, unordered=()) -> dict:
    """``oracle.call`` for an answer that shows a change just made. Kafka's brokers learn of its
    controller's changes (configs, SCRAM users) a moment after the change is answered: both are
    asked again until the answers agree or ``timeout`` passes, then compared as by ``call``.
    ``prepare``: what to make of each answer before comparing (e.g. to leave out others' data)."""
    deadline = trio.current_time() + timeout
    while True:
        ours, kafka = (prepare(answer) for answer in await oracle.both(api_key, version, body))
        mine, theirs = oracle.ours.peek(ours, unordered), oracle.kafka.peek(kafka, unordered)
        if unordered:
            mine, theirs = sort_lists(mine, unordered), sort_lists(theirs, unordered)
        if not diff(mine, theirs) or trio.current_time() > deadline:
            return oracle.compare(api_key, version, ours, kafka, what=what, unordered=unordered)
        await trio.sleep(0.05)
