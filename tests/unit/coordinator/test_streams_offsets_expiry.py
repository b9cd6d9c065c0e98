"""A streams group's committed offsets expire as Kafka's do (StreamsGroup.offsetExpirationCondition:
each offset's commit time; a live group's source topics never), and an empty streams group whose
offsets all expired is deleted with them, its records tombstoned (time passed in)."""

from __future__ import annotations

from coordinator.config import CoordinatorConfig
from protocol.api_keys import ApiKey
from protocol.messages import REQUESTS

from tests.support.consumer_harness import ConsumerHarness, replayed

Heartbeat = REQUESTS[ApiKey.STREAMS_GROUP_HEARTBEAT].cls
Commit = REQUESTS[ApiKey.OFFSET_COMMIT].cls


def beat(h: ConsumerHarness, epoch: int, tasks=None):
    sub = Heartbeat.Topology.Subtopology
    topology = Heartbeat.Topology(epoch=0, subtopologies=(sub(
        subtopology_id="0", source_topics=("foo",), source_topic_regex=(), state_changelog_topics=(),
        repartition_sink_topics=(), repartition_source_topics=(), copartition_groups=()),))
    joining = epoch == 0
    answer = h.replies[h.send(ApiKey.STREAMS_GROUP_HEARTBEAT, 0, Heartbeat(
        group_id=h.group, member_id="m1", member_epoch=epoch, endpoint_information_epoch=-1,
        rebalance_timeout_ms=30_000 if joining else -1, topology=topology if joining else None,
        active_tasks=() if tasks is None else tasks, standby_tasks=(), warmup_tasks=(),
        process_id="p1" if joining else None))]
    assert answer.error_code == 0, answer
    return answer


def commit(h: ConsumerHarness, epoch: int, topic: str) -> None:
    t = Commit.OffsetCommitRequestTopic
    answer = h.replies[h.send(ApiKey.OFFSET_COMMIT, 9, Commit(
        group_id=h.group, generation_id_or_member_epoch=epoch, member_id="m1", group_instance_id=None,
        topics=(t(name=topic, partitions=(t.OffsetCommitRequestPartition(partition_index=0, committed_offset=5,
                                                                           committed_metadata=""),)),)))]
    assert all(p.error_code == 0 for x in answer.topics for p in x.partitions), answer


def test_offsets_of_an_empty_streams_group_expire_and_the_group_goes():
    h = ConsumerHarness(CoordinatorConfig(offsets_retention_minutes=1, offsets_retention_check_interval_ms=10_000,
                                          group_streams_initial_rebalance_delay_ms=0,
                                          group_streams_assignment_interval_ms=0), topics={"foo": 1, "bar": 1})
    h._collect(h.shard.loaded(0))
    epoch = beat(h, 0).member_epoch
    commit(h, epoch, "foo")
    commit(h, epoch, "bar")
    for _ in range(5):                         # a minute on, the member alive: bar is no source
        h.advance(14_000)                      # topic (gone), foo is (kept)
        beat(h, epoch)
    assert set(h.shard.offsets["g"]) == {("foo", 0)}
    beat(h, -1)                                # the member leaves: the group is Empty
    h.advance(10_000)
    assert "g" not in h.shard.offsets and "g" not in h.shard.streams.groups
    again = replayed(h)                        # its tombstones replay to nothing
    assert "g" not in again.streams.groups and "g" not in again.offsets
