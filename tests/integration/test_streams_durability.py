"""Issue 29: a streams group outlives the broker. Its records (the topology, the members, the
target and current assignments, the epochs) are replayed after a clean restart and after a
kill -9: StreamsGroupDescribe answers the same, the members go on at their epochs with their
tasks, and `groupbroker log dump` prints the records by name."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from kafka_client.blocking import BlockingClient
from protocol.api_keys import ApiKey
from protocol.messages import REQUESTS

MEMBERS = ("Xr6q0AbXT2u8r4X0w1n9cA", "Ys7r1BcYU3v9s5Y1x2o0dB")
HEARTBEAT = REQUESTS[ApiKey.STREAMS_GROUP_HEARTBEAT].cls


def topology(topic: str):
    sub = HEARTBEAT.Topology.Subtopology
    return HEARTBEAT.Topology(epoch=0, subtopologies=(sub(
        subtopology_id="0", source_topics=(topic,), source_topic_regex=(), state_changelog_topics=(
            sub.TopicInfo(name="app-store-changelog", partitions=0, replication_factor=0, topic_configs=()),),
        repartition_sink_topics=(), repartition_source_topics=(), copartition_groups=()),))


def beat(client, group: str, member: int, epoch: int, topic: str, owned=None):
    joining = epoch == 0
    ids = HEARTBEAT.TaskIds
    tasks = None if owned is None else tuple(ids(subtopology_id=s, partitions=ps) for s, ps in owned)
    answer = client.call(ApiKey.STREAMS_GROUP_HEARTBEAT, 0, HEARTBEAT(
        group_id=group, member_id=MEMBERS[member], member_epoch=epoch, endpoint_information_epoch=-1,
        rebalance_timeout_ms=30000 if joining else -1, topology=topology(topic) if joining else None,
        active_tasks=() if joining else tasks, standby_tasks=() if joining or owned is not None else None,
        warmup_tasks=() if joining or owned is not None else None, process_id=f"process-{member}" if joining else None))
    assert answer.error_code == 0, answer
    return answer


def describe(client, group: str):
    cls = REQUESTS[ApiKey.STREAMS_GROUP_DESCRIBE].cls
    answer = client.call(ApiKey.STREAMS_GROUP_DESCRIBE, 0, cls(group_ids=(group,), include_authorized_operations=False))
    return answer.groups[0]


@pytest.fixture
def streams_broker(start_broker):
    return start_broker({"group.streams.initial.rebalance.delay.ms": "0", "group.streams.assignment.interval.ms": "0",
                         "group.streams.num.standby.replicas": "1"})


def settle(client, group: str, topic: str) -> dict:
    """Two members heartbeat with what they hold until the group is Stable: member -> (epoch,
    its active tasks)."""
    held = {}
    for m in (0, 1):
        a = beat(client, group, m, 0, topic)
        held[m] = (a.member_epoch, [(t.subtopology_id, t.partitions) for t in a.active_tasks])
    deadline = time.monotonic() + 15       # the changelog topic is created meanwhile, in the background
    while time.monotonic() < deadline:
        time.sleep(0.1)
        for m in (0, 1):
            a = beat(client, group, m, held[m][0], topic, owned=held[m][1])
            tasks = held[m][1] if a.active_tasks is None else [(t.subtopology_id, t.partitions) for t in a.active_tasks]
            held[m] = (a.member_epoch, tasks)
        if describe(client, group).group_state == "Stable":
            return held
    raise AssertionError(describe(client, group))


@pytest.mark.parametrize("how", ["restart", "kill -9"])
def test_a_streams_group_outlives_the_broker(streams_broker, how):
    topic, group = "words", "durable-streams"
    client = BlockingClient("127.0.0.1", streams_broker.port, client_id="durability")
    topics = REQUESTS[ApiKey.CREATE_TOPICS].cls
    client.call(ApiKey.CREATE_TOPICS, 7, topics(topics=(topics.CreatableTopic(
        name=topic, num_partitions=4, replication_factor=1, assignments=(), configs=()),), timeout_ms=10000,
        validate_only=False))
    client.call(ApiKey.METADATA, 12, REQUESTS[ApiKey.METADATA].cls(topics=None))
    held = settle(client, group, topic)
    before = describe(client, group)
    assert sorted(len(t[0][1]) for _, t in held.values()) == [2, 2], held
    assert all(m.assignment.standby_tasks for m in before.members), before      # one standby each
    client.close()
    if how == "restart":
        streams_broker.restart()
    else:
        streams_broker.kill()
        streams_broker.start(streams_broker.port)
    client = BlockingClient("127.0.0.1", streams_broker.port, client_id="durability")
    for m in (0, 1):                       # the members go on where they were, not fenced
        answer = beat(client, group, m, held[m][0], topic, owned=held[m][1])
        assert answer.member_epoch == held[m][0] and answer.active_tasks is None, answer
    # (the topology's partition counts are configured again at the first heartbeat, as in Kafka)
    assert describe(client, group) == before
    client.close()
    assert streams_broker.stop() == 0
    dump = subprocess.run([sys.executable, "-m", "broker", "log", "dump", str(streams_broker.data_dir)],
                          capture_output=True, text=True, timeout=60)
    for name in ("StreamsGroupTopology(", "StreamsGroupMemberMetadata(", "StreamsGroupCurrentMemberAssignment(",
                 "state=STABLE", "StreamsGroupTargetAssignmentMember("):
        assert name in dump.stdout, dump.stdout[-3000:]
