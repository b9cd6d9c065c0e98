"""Committed offsets against Apache Kafka: OffsetCommit, OffsetFetch and OffsetDelete at every
version we serve, with generations current and stale, unknown topics and partitions, simple
(group-less) commits, and topics named by id from OffsetCommit/OffsetFetch v10."""

import uuid

import pytest

from protocol.api_keys import ApiKey
from protocol.registry import API_TABLE
from tests.oracle.steps import create_topic, req, stable_member, sub, unique, versions
from tests.support.differential import Alias

TOPIC_IDS_SINCE = 10
#: an id no topic has, on either broker
UNKNOWN_ID = uuid.UUID("6f1c1f0e-7a51-4d2b-9c1e-0d9b5a3e2f11")
#: the answer for all of a group's offsets lists topics and partitions in the order of Kafka's
#: internal hash tables (docs/kafka-differences.md)
HASHED = ("topics", "partitions")


def commit_topic(version: int, name: str, topic_id, partitions: dict[int, int], metadata: str | None = "m"):
    named = {"topic_id": topic_id} if version >= TOPIC_IDS_SINCE else {"name": name}
    return sub(ApiKey.OFFSET_COMMIT, "OffsetCommitRequestTopic", **named, partitions=tuple(
        sub(ApiKey.OFFSET_COMMIT, "OffsetCommitRequestPartition", partition_index=p, committed_offset=o,
            committed_leader_epoch=-1, committed_metadata=metadata)
        for p, o in partitions.items()))


def commit(version: int, group: str, topics, *, generation: int = -1, member: str = ""):
    return req(ApiKey.OFFSET_COMMIT, group_id=group, generation_id_or_member_epoch=generation,
               member_id=member, topics=tuple(topics))


def fetch(version: int, group: str, topics: list | None, *, require_stable: bool = False):
    """``topics``: [(name, topic id, [partitions])], or None for every committed offset."""
    if version < 8:
        return req(ApiKey.OFFSET_FETCH, group_id=group, require_stable=require_stable, topics=None if topics is None
                   else tuple(sub(ApiKey.OFFSET_FETCH, "OffsetFetchRequestTopic", name=n, partition_indexes=tuple(p))
                              for n, _, p in topics))
    named = (lambda n, i: {"topic_id": i}) if version >= TOPIC_IDS_SINCE else (lambda n, i: {"name": n})
    return req(ApiKey.OFFSET_FETCH, require_stable=require_stable, groups=(
        sub(ApiKey.OFFSET_FETCH, "OffsetFetchRequestGroup", group_id=group, topics=None if topics is None else tuple(
            sub(ApiKey.OFFSET_FETCH, "OffsetFetchRequestTopics", **named(n, i), partition_indexes=tuple(p))
            for n, i, p in topics)),))


async def topic_with_id(oracle, name: str, partitions: int) -> Alias:
    await create_topic(oracle, name, partitions)
    meta = req(ApiKey.METADATA, topics=(sub(ApiKey.METADATA, "MetadataRequestTopic", name=name),),
               allow_auto_topic_creation=False)
    answer = await oracle.call(ApiKey.METADATA, 12, meta)
    return Alias(answer["topics"][0]["topic_id"])


@pytest.mark.parametrize("version", versions(ApiKey.OFFSET_COMMIT))
async def test_offset_commit_and_fetch(oracle, request, version):
    group, topic = unique(request), unique(request, "-t")
    topic_id = await topic_with_id(oracle, topic, 3)
    fetch_version = min(version, API_TABLE[ApiKey.OFFSET_FETCH].max_version)
    await oracle.call(ApiKey.OFFSET_COMMIT, version, commit(version, group, [
        commit_topic(version, topic, topic_id, {0: 5, 1: 7}, metadata=None if version >= 1 else "m")]),
        what="a simple commit to a new group")
    await oracle.call(ApiKey.OFFSET_COMMIT, version, commit(version, group, [
        commit_topic(version, topic, topic_id, {2: 9, 3: 1}), commit_topic(version, "no-such-topic", UNKNOWN_ID, {0: 1})]),
        what="an unknown partition and an unknown topic")
    await oracle.call(ApiKey.OFFSET_FETCH, fetch_version, fetch(fetch_version, group, [(topic, topic_id, [0, 1, 2, 5])]))
    if fetch_version >= 2:
        await oracle.call(ApiKey.OFFSET_FETCH, fetch_version, fetch(fetch_version, group, None),
                          what="all offsets", unordered=HASHED)
        await oracle.call(ApiKey.OFFSET_FETCH, fetch_version, fetch(fetch_version, group + "-none", None),
                          what="a group with none")
    await oracle.call(ApiKey.OFFSET_COMMIT, version, commit(version, group, [
        commit_topic(version, topic, topic_id, {0: 6}, metadata="x" * 5000)]), what="metadata too large")


@pytest.mark.parametrize("version", [v for v in versions(ApiKey.OFFSET_COMMIT) if v >= 1])
async def test_offset_commit_generations(oracle, request, version):
    group, topic = unique(request), unique(request, "-t")
    topic_id = await topic_with_id(oracle, topic, 2)
    member, generation = await stable_member(oracle, group)
    offsets = [commit_topic(version, topic, topic_id, {0: 3})]
    await oracle.call(ApiKey.OFFSET_COMMIT, version, commit(version, group, offsets, generation=generation,
                                                            member=member), what="current generation")
    await oracle.call(ApiKey.OFFSET_COMMIT, version, commit(version, group, offsets, generation=generation + 1,
                                                            member=member), what="wrong generation")
    await oracle.call(ApiKey.OFFSET_COMMIT, version, commit(version, group, offsets, generation=generation,
                                                            member="stranger"), what="unknown member")
    await oracle.call(ApiKey.OFFSET_COMMIT, version, commit(version, group, offsets), what="generation -1 on a live group")
    await oracle.call(ApiKey.OFFSET_COMMIT, version, commit(version, group + "-none", offsets, generation=1,
                                                            member="m"), what="a generation on an unknown group")
    fetch_version = min(version, API_TABLE[ApiKey.OFFSET_FETCH].max_version)
    await oracle.call(ApiKey.OFFSET_FETCH, fetch_version, fetch(fetch_version, group, [(topic, topic_id, [0, 1])],
                                                                require_stable=fetch_version >= 7))


@pytest.mark.parametrize("version", versions(ApiKey.OFFSET_FETCH))
async def test_offset_fetch_versions(oracle, request, version):
    group, topic = unique(request), unique(request, "-t")
    topic_id = await topic_with_id(oracle, topic, 2)
    await oracle.call(ApiKey.OFFSET_COMMIT, 8, commit(8, group, [commit_topic(8, topic, topic_id, {0: 11, 1: 12})]))
    await oracle.call(ApiKey.OFFSET_FETCH, version, fetch(version, group, [(topic, topic_id, [0, 1, 7])]))
    if version >= 2:
        await oracle.call(ApiKey.OFFSET_FETCH, version, fetch(version, group, None), what="all offsets",
                          unordered=HASHED)
    if version >= 8:
        await oracle.call(ApiKey.OFFSET_FETCH, version, req(ApiKey.OFFSET_FETCH, groups=tuple(
            sub(ApiKey.OFFSET_FETCH, "OffsetFetchRequestGroup", group_id=g, topics=None)
            for g in (group, group + "-other", group))), what="several groups", unordered=HASHED)


@pytest.mark.parametrize("version", versions(ApiKey.OFFSET_DELETE))
async def test_offset_delete(oracle, request, version):
    group, topic = unique(request), unique(request, "-t")
    topic_id = await topic_with_id(oracle, topic, 2)
    await oracle.call(ApiKey.OFFSET_COMMIT, 8, commit(8, group, [commit_topic(8, topic, topic_id, {0: 1, 1: 2})]))

    def delete(g, *topics):
        return req(ApiKey.OFFSET_DELETE, group_id=g, topics=tuple(
            sub(ApiKey.OFFSET_DELETE, "OffsetDeleteRequestTopic", name=n, partitions=tuple(
                sub(ApiKey.OFFSET_DELETE, "OffsetDeleteRequestPartition", partition_index=p) for p in ps))
            for n, ps in topics))
    await oracle.call(ApiKey.OFFSET_DELETE, version, delete(group, (topic, [0, 5]), ("no-such-topic", [0])))
    await oracle.call(ApiKey.OFFSET_DELETE, version, delete(group + "-none", (topic, [0])), what="unknown group")
    await oracle.call(ApiKey.OFFSET_FETCH, 8, fetch(8, group, None), unordered=HASHED)
    other = unique(request, "-other")
    await create_topic(oracle, other, 1)
    await stable_member(oracle, group + "-live", topics=(topic,))
    await oracle.call(ApiKey.OFFSET_COMMIT, 8, commit(8, group + "-live", [
        commit_topic(8, topic, topic_id, {0: 1}), commit_topic(8, other, None, {0: 1})]))
    await oracle.call(ApiKey.OFFSET_DELETE, version, delete(group + "-live", (other, [0])),
                      what="a live group; its members do not subscribe to the topic")
    await oracle.call(ApiKey.OFFSET_DELETE, version, delete(group + "-live", (topic, [0])),
                      what="a topic the members subscribe to")
