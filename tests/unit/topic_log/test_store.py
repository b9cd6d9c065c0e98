"""TopicStore: Kafka's topic-name and partition rules, ids that survive restarts, recovery."""

from __future__ import annotations

import os

import pytest

from topic_log import (InvalidPartitions, InvalidTopic, TopicAlreadyExists, TopicStore,
                       UnknownTopicOrPartition)
from protocol.errors import ErrorCode
from tests.unit.topic_log.test_batches import batch, values_of


def test_create_lists_and_reopens_with_the_same_ids_and_data(tmp_path):
    store = TopicStore(tmp_path, num_partitions=2)
    orders = store.create_topic("orders", 3)
    store.create_topic("audit")                                      # num_partitions
    store.partition("orders", 2).append(batch([b"x"]), 0)
    assert [(t.name, len(t.partitions)) for t in store.topics()] == [("audit", 2), ("orders", 3)]
    store.close()
    again = TopicStore(tmp_path)
    assert again.topic("orders").topic_id == orders.topic_id
    assert again.metadata_image().by_id[orders.topic_id].name == "orders"
    assert values_of(again.partition("orders", 2).read(0, 1 << 20)) == [(0, b"x")]
    assert len(again.topic("audit").partitions) == 2


@pytest.mark.parametrize("name", ["", ".", "..", "a" * 250, "with space", "slash/y", "ünï"])
def test_illegal_topic_names_are_refused(tmp_path, name):
    with pytest.raises(InvalidTopic) as err:
        TopicStore(tmp_path).create_topic(name, 1)
    assert err.value.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION


def test_legal_edge_names_and_collisions(tmp_path):
    store = TopicStore(tmp_path)
    store.create_topic("a" * 249, 1)
    store.create_topic("my.topic-1_x", 1)
    with pytest.raises(InvalidTopic):
        store.create_topic("my_topic-1_x", 1)                        # '.' versus '_'


def test_existing_topic_and_bad_partition_counts(tmp_path):
    store = TopicStore(tmp_path)
    store.create_topic("t", 1)
    with pytest.raises(TopicAlreadyExists) as exists:
        store.create_topic("t", 1)
    assert exists.value.error_code == ErrorCode.TOPIC_ALREADY_EXISTS
    with pytest.raises(TopicAlreadyExists):
        store.create_topic("__consumer_offsets", 1)
    for count in (0, -5):
        with pytest.raises(InvalidPartitions) as bad:
            store.create_topic("u", count)
        assert bad.value.error_code == ErrorCode.INVALID_PARTITIONS
    store.create_topic("u", 1, validate_only=True)
    with pytest.raises(UnknownTopicOrPartition):
        store.topic("u")


def test_delete_removes_the_directories(tmp_path):
    store = TopicStore(tmp_path)
    topic = store.create_topic("gone", 2)
    store.partition("gone", 0).append(batch([b"x"]), 0)
    store.delete_topic("gone")
    assert not [e for e in os.listdir(tmp_path) if e.startswith("gone") or e.endswith(".delete")]
    with pytest.raises(UnknownTopicOrPartition) as err:
        store.delete_topic("gone")
    assert err.value.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert topic.topic_id not in store.metadata_image().by_id
    recreated = store.create_topic("gone", 1)
    assert recreated.topic_id != topic.topic_id and recreated.partitions[0].high_watermark == 0


def test_unknown_partitions_and_auto_creation(tmp_path):
    store = TopicStore(tmp_path, num_partitions=3)
    with pytest.raises(UnknownTopicOrPartition):
        store.partition("nope", 0)
    topic, created = store.get_or_create("auto")
    assert created and len(topic.partitions) == 3
    assert store.get_or_create("auto") == (topic, False)
    with pytest.raises(UnknownTopicOrPartition):
        store.partition("auto", 3)
    with pytest.raises(InvalidTopic):
        store.get_or_create("bad name")
    with pytest.raises(UnknownTopicOrPartition):
        TopicStore(tmp_path / "other", auto_create=False).get_or_create("auto")


def test_recovery_ignores_offsets_topic_finishes_deletes_and_completes_creates(tmp_path):
    store = TopicStore(tmp_path)
    store.create_topic("t", 3)
    store.close()
    os.makedirs(tmp_path / "__consumer_offsets-0")
    os.makedirs(tmp_path / "0123abcd-0.delete")                      # a crash mid-delete
    os.remove(tmp_path / "t-1" / "partition.metadata")               # crashes mid-create
    for name in os.listdir(tmp_path / "t-2"):
        os.remove(tmp_path / "t-2" / name)
    os.rmdir(tmp_path / "t-2")
    again = TopicStore(tmp_path)
    assert [t.name for t in again.topics()] == ["t"]
    assert len(again.topic("t").partitions) == 3
    assert os.path.exists(tmp_path / "t-2" / "partition.metadata")
    assert not os.path.exists(tmp_path / "0123abcd-0.delete")
    assert os.path.isdir(tmp_path / "__consumer_offsets-0")


def test_retention_runs_over_every_partition(tmp_path):
    one = len(batch([b"v"]))
    store = TopicStore(tmp_path, num_partitions=2, segment_bytes=one, retention_bytes=one)
    store.create_topic("t")
    for p in (0, 1):
        for _ in range(3):
            store.partition("t", p).append(batch([b"v"]), 0)
    assert store.apply_retention(0) == 4
    assert [plog.log_start_offset for plog in store.topic("t").partitions] == [2, 2]
