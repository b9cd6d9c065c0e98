"""A 3-node cluster on the wire (issue 14): what each node answers for the groups and partitions
it does not own, what moves change, and that committed offsets and group state survive them.

Raw requests over real sockets to a broker in this trio run; faults through its control surface.
"""

from __future__ import annotations

import os
import time

import pytest
import trio

from tests.support.trio_client import TrioClient
from broker.config import BrokerConfig
from broker.server.broker import Broker
from coordinator.routing import shard_for
from offsets_log.tools import verify_all
from protocol import REQUESTS
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from tests.unit.topic_log.test_batches import batch

E = ErrorCode
R = {key: REQUESTS[key].cls for key in (ApiKey.DESCRIBE_LOG_DIRS, ApiKey.ELECT_LEADERS, ApiKey.FIND_COORDINATOR, ApiKey.METADATA, ApiKey.PRODUCE, ApiKey.FETCH,
                                        ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH, ApiKey.HEARTBEAT,
                                        ApiKey.JOIN_GROUP, ApiKey.DESCRIBE_GROUPS, ApiKey.LIST_GROUPS,
                                        ApiKey.CREATE_TOPICS, ApiKey.OFFSET_FOR_LEADER_EPOCH,
                                        ApiKey.DESCRIBE_CLUSTER, ApiKey.INIT_PRODUCER_ID, ApiKey.LIST_OFFSETS)}
GROUP, TOPIC = "cluster-group", "cluster-topic"


@pytest.fixture
async def cluster(nursery, tmp_path):
    broker = Broker(BrokerConfig.build({"group.initial.rebalance.delay.ms": "0", "broker.rack": "r0,r1,r2",
                                        "group.streams.initial.rebalance.delay.ms": "0",
                                        "group.streams.assignment.interval.ms": "0"},
                                       port=0, data_dir=str(tmp_path), nodes=3))
    await nursery.start(broker.serve)
    await broker.ready.wait()
    yield broker
    broker.stop()


async def ask(broker, node: int, api_key: int, version: int, **fields):
    client = await TrioClient.connect(broker.ports[node])
    try:
        return await client.call(api_key, version, R[api_key](**fields))
    finally:
        await client.aclose()


async def coordinator(broker, group: str = GROUP, node: int = 0):
    answer = await ask(broker, node, ApiKey.FIND_COORDINATOR, 3, key=group)
    assert answer.error_code == E.NONE
    return answer


async def metadata(broker, node: int = 0, topic: str = TOPIC):
    return await ask(broker, node, ApiKey.METADATA, 12, topics=(R[ApiKey.METADATA].MetadataRequestTopic(name=topic),))


def fetch(topic_id, *, offset: int = 0, max_wait_ms: int = 0, current_leader_epoch: int = -1):
    """A Fetch (v13+: by topic id) of partition 0."""
    t = R[ApiKey.FETCH].FetchTopic
    return R[ApiKey.FETCH](max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=1 << 20, topics=(t(
        topic_id=topic_id, partitions=(t.FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20,
                                                        current_leader_epoch=current_leader_epoch),)),))


async def create_topic(broker, partitions: int = 3) -> None:
    ct = R[ApiKey.CREATE_TOPICS]
    answer = await ask(broker, 0, ApiKey.CREATE_TOPICS, 5, topics=(ct.CreatableTopic(
        name=TOPIC, num_partitions=partitions, replication_factor=3),))
    assert answer.topics[0].error_code == E.NONE, answer


async def commit(broker, node: int, offset: int, version: int = 8):
    oc = R[ApiKey.OFFSET_COMMIT]
    return await ask(broker, node, ApiKey.OFFSET_COMMIT, version, group_id=GROUP, generation_id_or_member_epoch=-1,
                     member_id="", topics=(oc.OffsetCommitRequestTopic(name=TOPIC, partitions=(
                         oc.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
                             partition_index=0, committed_offset=offset),)),))


async def committed(broker, node: int) -> tuple[int, int]:
    """(error, offset) of partition 0 as OffsetFetch v7 asks ``node``."""
    of = R[ApiKey.OFFSET_FETCH]
    answer = await ask(broker, node, ApiKey.OFFSET_FETCH, 7, group_id=GROUP, topics=(
        of.OffsetFetchRequestTopic(name=TOPIC, partition_indexes=(0,)),))
    if answer.error_code != E.NONE:
        return answer.error_code, -1
    return E.NONE, answer.topics[0].partitions[0].committed_offset


async def committed_once_loaded(broker, node: int) -> tuple[int, int]:
    """:func:`committed`, asked again while the node answers COORDINATOR_LOAD_IN_PROGRESS (it
    replays the shard's log after a move)."""
    for _ in range(200):
        result = await committed(broker, node)
        if result[0] != E.COORDINATOR_LOAD_IN_PROGRESS:
            return result
        await trio.sleep(0.01)
    return result


async def test_every_node_answers_metadata_for_the_whole_cluster(cluster):
    await create_topic(cluster)
    for node in range(3):
        answer = await metadata(cluster, node)
        assert [(b.node_id, b.port, b.rack) for b in answer.brokers] == [
            (n, cluster.ports[n], f"r{n}") for n in range(3)]
        assert answer.controller_id == 0
        partitions = answer.topics[0].partitions
        assert {p.leader_id for p in partitions} == {0, 1, 2}        # spread over the nodes
        for p in partitions:
            assert p.error_code == E.NONE and p.leader_epoch == 0
            assert sorted(p.replica_nodes) == [0, 1, 2] and p.replica_nodes[0] == p.leader_id
            assert sorted(p.isr_nodes) == [0, 1, 2]
    described = await ask(cluster, 1, ApiKey.DESCRIBE_CLUSTER, 0)
    assert sorted(b.broker_id for b in described.brokers) == [0, 1, 2]


async def test_group_requests_to_other_nodes_get_not_coordinator(cluster):
    await create_topic(cluster)
    owner = (await coordinator(cluster)).node_id
    for node in range(3):
        found = await coordinator(cluster, node=node)       # every node names the same one
        assert (found.node_id, found.port) == (owner, cluster.ports[owner])
    others = [n for n in range(3) if n != owner]
    for node in others:
        assert (await commit(cluster, node, 5)).topics[0].partitions[0].error_code == E.NOT_COORDINATOR
        assert (await committed(cluster, node))[0] == E.NOT_COORDINATOR
        heartbeat = await ask(cluster, node, ApiKey.HEARTBEAT, 4, group_id=GROUP, generation_id=1, member_id="m")
        assert heartbeat.error_code == E.NOT_COORDINATOR
        described = await ask(cluster, node, ApiKey.DESCRIBE_GROUPS, 5, groups=(GROUP,))
        assert described.groups[0].error_code == E.NOT_COORDINATOR
    assert (await commit(cluster, owner, 5)).topics[0].partitions[0].error_code == E.NONE
    assert await committed(cluster, owner) == (E.NONE, 5)
    listed = {node: {g.group_id for g in (await ask(cluster, node, ApiKey.LIST_GROUPS, 4)).groups}
              for node in range(3)}
    assert listed[owner] == {GROUP} and all(not listed[n] for n in others)


async def test_transactional_ids_have_their_own_coordinator(cluster):
    tid = "cluster-txn"
    found = await ask(cluster, 0, ApiKey.FIND_COORDINATOR, 3, key=tid, key_type=1)
    owner = found.node_id
    for node in range(3):
        answer = await ask(cluster, node, ApiKey.INIT_PRODUCER_ID, 4, transactional_id=tid,
                           transaction_timeout_ms=60_000)
        assert answer.error_code == (E.NONE if node == owner else E.NOT_COORDINATOR)
        if node == owner:
            assert answer.producer_epoch == 0
    new = (owner + 1) % 3
    outcome = await cluster.control.execute("move-coordinator", transactional_id=tid, node=new)
    assert "transaction coordinators moved: [" in outcome
    assert (await ask(cluster, 1, ApiKey.FIND_COORDINATOR, 3, key=tid, key_type=1)).node_id == new
    assert (await ask(cluster, owner, ApiKey.INIT_PRODUCER_ID, 4, transactional_id=tid,
                      transaction_timeout_ms=60_000)).error_code == E.NOT_COORDINATOR
    for _ in range(200):                      # replayed from the log in the new node's folder
        again = await ask(cluster, new, ApiKey.INIT_PRODUCER_ID, 4, transactional_id=tid,
                          transaction_timeout_ms=60_000)
        if again.error_code != E.COORDINATOR_LOAD_IN_PROGRESS:
            break
        await trio.sleep(0.01)
    assert again.error_code == E.NONE and again.producer_epoch == 1     # the id's state came along


async def test_produce_and_fetch_to_a_follower_name_the_leader(cluster):
    await create_topic(cluster, partitions=1)
    topic = (await metadata(cluster)).topics[0]
    leader, topic_id = topic.partitions[0].leader_id, topic.topic_id
    follower = (leader + 1) % 3
    pr = R[ApiKey.PRODUCE]
    request = dict(acks=-1, timeout_ms=1000, topic_data=(pr.TopicProduceData(name=TOPIC, partition_data=(
        pr.TopicProduceData.PartitionProduceData(index=0, records=batch([b"a", b"b"])),)),))
    answer = await ask(cluster, follower, ApiKey.PRODUCE, 11, **request)
    part = answer.responses[0].partition_responses[0]
    assert part.error_code == E.NOT_LEADER_OR_FOLLOWER
    assert (part.current_leader.leader_id, part.current_leader.leader_epoch) == (leader, 0)     # KIP-951
    assert [(n.node_id, n.port) for n in answer.node_endpoints] == [(leader, cluster.ports[leader])]
    old = await ask(cluster, follower, ApiKey.PRODUCE, 9, **request)                   # no hint before v10
    assert old.responses[0].partition_responses[0].error_code == E.NOT_LEADER_OR_FOLLOWER
    assert (await ask(cluster, leader, ApiKey.PRODUCE, 11, **request)).responses[0].partition_responses[0].error_code == E.NONE
    client = await TrioClient.connect(cluster.ports[follower])
    try:
        answer = await client.call(ApiKey.FETCH, 16, fetch(topic_id, max_wait_ms=5000))
    finally:
        await client.aclose()
    part = answer.responses[0].partitions[0]
    assert part.error_code == E.NOT_LEADER_OR_FOLLOWER and part.high_watermark == -1
    assert part.current_leader.leader_id == leader
    assert [n.node_id for n in answer.node_endpoints] == [leader]


async def test_a_leader_move_bumps_the_epoch_and_fences_stale_clients(cluster):
    await create_topic(cluster, partitions=1)
    topic = (await metadata(cluster)).topics[0]
    leader, topic_id = topic.partitions[0].leader_id, topic.topic_id
    client = await TrioClient.connect(cluster.ports[leader])
    try:
        pr = R[ApiKey.PRODUCE]
        produce = pr(acks=-1, timeout_ms=1000, topic_data=(pr.TopicProduceData(name=TOPIC, partition_data=(
            pr.TopicProduceData.PartitionProduceData(index=0, records=batch([b"x"] * 3)),)),))
        assert (await client.call(ApiKey.PRODUCE, 11, produce)).responses[0].partition_responses[0].error_code == E.NONE
        # a fetch parked on the leader is answered at once when the leader moves
        parked = []
        async with trio.open_nursery() as nursery:
            async def park() -> None:
                parked.append(await client.call(ApiKey.FETCH, 16, fetch(topic_id, offset=3, max_wait_ms=30_000)))
            nursery.start_soon(park)
            await trio.sleep(0.2)
            new = (leader + 1) % 3
            await cluster.control.execute("move-leader", topic=TOPIC, partition=0, node=new)
        assert parked[0].responses[0].partitions[0].error_code == E.NOT_LEADER_OR_FOLLOWER
        assert parked[0].responses[0].partitions[0].current_leader.leader_id == new
    finally:
        await client.aclose()
    part = (await metadata(cluster)).topics[0].partitions[0]
    assert (part.leader_id, part.leader_epoch, part.replica_nodes[0]) == (new, 1, new)
    # the new leader stamps epoch 1 on what it appends; epoch 0 ends where epoch 1 began
    assert (await ask(cluster, new, ApiKey.PRODUCE, 11, **{f: getattr(produce, f) for f in (
        "acks", "timeout_ms", "topic_data")})).responses[0].partition_responses[0].error_code == E.NONE
    client = await TrioClient.connect(cluster.ports[new])
    try:
        read = await client.call(ApiKey.FETCH, 16, fetch(topic_id, offset=3))
        assert int.from_bytes(read.responses[0].partitions[0].records[12:16], "big") == 1
        fenced = (await client.call(ApiKey.FETCH, 16, fetch(topic_id, current_leader_epoch=0))).responses[0].partitions[0]
        assert fenced.error_code == E.FENCED_LEADER_EPOCH and fenced.current_leader.leader_epoch == 1
    finally:
        await client.aclose()
    ofl = R[ApiKey.OFFSET_FOR_LEADER_EPOCH]

    async def epoch_end(node: int, epoch: int, current: int = -1):
        answer = await ask(cluster, node, ApiKey.OFFSET_FOR_LEADER_EPOCH, 4, replica_id=-1, topics=(
            ofl.OffsetForLeaderTopic(topic=TOPIC, partitions=(ofl.OffsetForLeaderTopic.OffsetForLeaderPartition(
                partition=0, current_leader_epoch=current, leader_epoch=epoch),)),))
        p = answer.topics[0].partitions[0]
        return p.error_code, p.leader_epoch, p.end_offset

    assert await epoch_end(new, 0) == (E.NONE, 0, 3)
    assert await epoch_end(new, 1, current=1) == (E.NONE, 1, 6)
    assert await epoch_end(new, 2) == (E.NONE, -1, -1)
    assert (await epoch_end(new, 0, current=0))[0] == E.FENCED_LEADER_EPOCH
    assert (await epoch_end(new, 1, current=2))[0] == E.UNKNOWN_LEADER_EPOCH
    assert (await epoch_end(leader, 1))[0] == E.NOT_LEADER_OR_FOLLOWER


async def test_coordinator_move_loads_on_the_new_node_and_keeps_offsets(cluster):
    await create_topic(cluster)
    old = (await coordinator(cluster)).node_id
    assert (await commit(cluster, old, 42)).topics[0].partitions[0].error_code == E.NONE
    # a stable member, then a second one whose JoinGroup parks (it waits for the first to rejoin)
    jg, sg = R[ApiKey.JOIN_GROUP], REQUESTS[ApiKey.SYNC_GROUP].cls
    client = await TrioClient.connect(cluster.ports[old])
    new = (old + 1) % 3

    def join(member: str):
        return jg(group_id=GROUP, session_timeout_ms=10_000, rebalance_timeout_ms=10_000, member_id=member,
                  protocol_type="consumer", protocols=(jg.JoinGroupRequestProtocol(name="range", metadata=b""),))

    try:
        first = await client.call(ApiKey.JOIN_GROUP, 9, join(""))
        joined = await client.call(ApiKey.JOIN_GROUP, 9, join(first.member_id))
        assert joined.error_code == E.NONE
        synced = await client.call(ApiKey.SYNC_GROUP, 5, sg(
            group_id=GROUP, generation_id=joined.generation_id, member_id=joined.member_id, protocol_type="consumer",
            protocol_name="range", assignments=(sg.SyncGroupRequestAssignment(member_id=joined.member_id,
                                                                               assignment=b"a"),)))
        assert synced.error_code == E.NONE
        second = await client.call(ApiKey.JOIN_GROUP, 9, join(""))
        await client.send(ApiKey.JOIN_GROUP, 9, join(second.member_id))        # parks
        await trio.sleep(0.1)
        outcome = await cluster.control.execute("move-coordinator", group=GROUP, node=new)
        assert f"moved: [{shard_for(GROUP)}]" in outcome
        assert (await client.receive())[1].error_code == E.NOT_COORDINATOR
    finally:
        await client.aclose()
    assert (await coordinator(cluster)).node_id == new
    assert (await committed(cluster, old))[0] == E.NOT_COORDINATOR
    assert await committed_once_loaded(cluster, new) == (E.NONE, 42)
    # the group as its log holds it: the first member, stable in generation 1 (the second
    # member's join was never written)
    group = (await ask(cluster, new, ApiKey.DESCRIBE_GROUPS, 5, groups=(GROUP,))).groups[0]
    assert (group.group_state, [m.member_id for m in group.members]) == ("Stable", [joined.member_id])
    # the shard's log now lives in the new owner's folder, and is sound
    shard = shard_for(GROUP)
    assert os.path.isdir(os.path.join(cluster.config.data_dir, "nodes", str(new), f"__consumer_offsets-{shard}"))
    assert not os.path.exists(os.path.join(cluster.config.data_dir, "nodes", str(old), f"__consumer_offsets-{shard}"))
    assert verify_all(cluster.config.data_dir) == []


async def test_a_stopped_node_drops_its_connections_and_hands_over(cluster):
    await create_topic(cluster)
    owner = (await coordinator(cluster)).node_id
    assert (await commit(cluster, owner, 7)).topics[0].partitions[0].error_code == E.NONE
    connected = await TrioClient.connect(cluster.ports[owner])
    outcome = await cluster.control.execute("stop-node", node=owner)
    assert "1 connection(s) dropped" in outcome
    assert await connected.closed_by_peer()
    with pytest.raises(OSError):
        await TrioClient.connect(cluster.ports[owner])
    survivor = (owner + 1) % 3
    answer = await metadata(cluster, survivor)
    assert owner not in [b.node_id for b in answer.brokers]
    assert all(owner not in p.isr_nodes and p.leader_id != owner for p in answer.topics[0].partitions)
    new = (await coordinator(cluster, node=survivor)).node_id
    assert new != owner
    assert await committed_once_loaded(cluster, new) == (E.NONE, 7)
    with pytest.raises(Exception, match="last one running|is stopped"):
        await cluster.control.execute("stop-node", node=owner)
    await cluster.control.execute("start-node", node=owner)
    assert owner in [b.node_id for b in (await metadata(cluster, owner)).brokers]
    # clear puts every coordinator and leader back where it started
    await cluster.control.execute("clear")
    assert (await coordinator(cluster)).node_id == owner
    assert await committed_once_loaded(cluster, owner) == (E.NONE, 7)


async def test_moves_that_cannot_be_made_are_refused(cluster):
    with pytest.raises(Exception, match="no node 7"):
        await cluster.control.execute("move-coordinator", group=GROUP, node=7)
    with pytest.raises(Exception, match="no partition"):
        await cluster.control.execute("move-leader", topic="nope", partition=0, node=1)
    owner = (await coordinator(cluster)).node_id
    with pytest.raises(Exception, match="already leads"):
        await cluster.control.execute("move-coordinator", group=GROUP, node=owner)


def test_serve_nodes_prints_every_node_and_the_shell_moves_them(tmp_path):
    """``groupbroker serve --nodes 3``: one line naming every node; ``groupbroker faults`` moves a
    coordinator and stops a node; after a clean stop ``groupbroker log verify`` finds every shard,
    wherever its node folder is."""
    import re
    import subprocess
    import sys

    from kafka_client.blocking import BlockingClient
    from broker.testing.launcher import TEST_DEFAULTS, BrokerProcess

    b = BrokerProcess(tmp_path / "data", tmp_path / "broker.log", {**TEST_DEFAULTS, "groupbroker.admin.port": 0},
                      nodes=3).start()
    try:
        assert re.fullmatch(r"groupbroker listening on 127\.0\.0\.1:\d+,127\.0\.0\.1:\d+,127\.0\.0\.1:\d+\n",
                            b.stdout_line)
        assert len(set(b.ports)) == 3 and b.bootstrap.count(",") == 2
        admin = re.search(r"admin endpoint listening on (\S+)", b.log_text()).group(1)

        def faults(*args):
            done = subprocess.run([sys.executable, "-m", "broker", "faults", "--admin", admin,
                                   "--data-dir", str(b.data_dir), *args], capture_output=True, text=True, timeout=30)
            return done.returncode, done.stdout + done.stderr

        client = BlockingClient("127.0.0.1", b.ports[2])
        owner = client.call(ApiKey.FIND_COORDINATOR, 3, R[ApiKey.FIND_COORDINATOR](key="shell-group")).node_id
        target = (owner + 1) % 3
        assert faults("move-coordinator", f"node={target}", "group=shell-group") == (
            0, f"coordinator of shard {shard_for('shell-group')} moved to node {target}: coordinator shards "
               f"moved: [{shard_for('shell-group')}]; transaction coordinators moved: none; other partition leaders "
               f"changed: 0\n")
        assert client.call(ApiKey.FIND_COORDINATOR, 3, R[ApiKey.FIND_COORDINATOR](key="shell-group")).node_id == target
        # groups on every node, listed and described by the kafka-consumer-groups.sh of groupbroker
        groups = {n: next(f"g{n}-{i}" for i in range(100) if client.call(
            ApiKey.FIND_COORDINATOR, 3, R[ApiKey.FIND_COORDINATOR](key=f"g{n}-{i}")).node_id == n) for n in range(3)}
        oc, ct = R[ApiKey.OFFSET_COMMIT], R[ApiKey.CREATE_TOPICS]
        client.call(ApiKey.CREATE_TOPICS, 5, ct(topics=(ct.CreatableTopic(name=TOPIC, num_partitions=1,
                                                                          replication_factor=3),)))
        for node, group in groups.items():
            owner = BlockingClient("127.0.0.1", b.ports[node])
            committed = owner.call(ApiKey.OFFSET_COMMIT, 8, oc(
                group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=(oc.OffsetCommitRequestTopic(
                    name=TOPIC, partitions=(oc.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
                        partition_index=0, committed_offset=node),)),)))
            assert committed.topics[0].partitions[0].error_code == E.NONE
            owner.close()
        listed = subprocess.run([sys.executable, "-m", "broker", "groups", "--bootstrap-server",
                                 f"127.0.0.1:{b.ports[1]}", "--list"], capture_output=True, text=True, timeout=30)
        assert sorted(listed.stdout.split()) == sorted(groups.values()), listed.stderr
        described = subprocess.run([sys.executable, "-m", "broker", "groups", "--bootstrap-server",
                                    f"127.0.0.1:{b.ports[0]}", "--describe", "--group", groups[2]],
                                   capture_output=True, text=True, timeout=30)
        assert re.search(rf"^{groups[2]}\s+{TOPIC}\s+0\s+2\s", described.stdout, re.MULTILINE), described.stdout
        code, out = faults("stop-node", "node=0")
        assert code == 0 and "node 0 stopped" in out
        code, out = faults("move-coordinator", "node=0", "group=shell-group")
        assert code == 1 and "node 0 is stopped" in out
        assert "nodes started: [0]" in faults("clear")[1]
        client.close()
    finally:
        assert b.stop() == 0
    nodes = tmp_path / "data" / "nodes"
    assert sorted(os.listdir(nodes)) == ["0", "1", "2"]
    assert sum(len(os.listdir(nodes / n)) for n in os.listdir(nodes)) == 50
    verified = subprocess.run([sys.executable, "-m", "broker", "log", "verify", str(tmp_path / "data")],
                              capture_output=True, text=True, timeout=60)
    assert verified.returncode == 0 and verified.stdout.endswith("0 problem(s)\n"), verified.stdout + verified.stderr
    dumped = subprocess.run([sys.executable, "-m", "broker", "log", "dump", str(tmp_path / "data")],
                            capture_output=True, text=True, timeout=60)
    assert dumped.returncode == 0


async def test_a_preferred_election_brings_leaders_back_to_their_first_replica(cluster):
    await create_topic(cluster, partitions=3)
    el = REQUESTS[ApiKey.ELECT_LEADERS].cls

    via = []                                      # a running node to ask

    async def elect(partitions=(0, 1, 2)):
        answer = await ask(cluster, via[0] if via else 0, ApiKey.ELECT_LEADERS, 2, election_type=0, timeout_ms=1000,
                           topic_partitions=None if partitions is None else (
                               el.TopicPartitions(topic=TOPIC, partitions=partitions),))
        return {r.partition_id: (r.error_code, r.error_message) for t in answer.replica_election_results
                for r in t.partition_result}

    assert {e for e, _ in (await elect()).values()} == {E.ELECTION_NOT_NEEDED}
    before = {p.partition_index: p for p in (await metadata(cluster)).topics[0].partitions}
    stopped = before[0].leader_id
    via.append((stopped + 1) % 3)
    await cluster.control.execute("stop-node", node=stopped)
    moved = {p for p, part in before.items() if part.leader_id == stopped}
    elected = await elect()
    assert all(elected[p] == (E.PREFERRED_LEADER_NOT_AVAILABLE, "The preferred leader was not available.")
               for p in moved)
    await cluster.control.execute("start-node", node=stopped)
    assert await elect(None) == {p: (E.NONE, None) for p in moved}      # all partitions: the elected only
    after = {p.partition_index: p for p in (await metadata(cluster, via[0])).topics[0].partitions}
    for p, part in after.items():
        assert part.leader_id == before[p].leader_id
        assert part.leader_epoch == (2 if p in moved else 0)
    assert {e for e, _ in (await elect()).values()} == {E.ELECTION_NOT_NEEDED}



async def test_each_node_describes_the_replicas_it_holds(cluster):
    ct = R[ApiKey.CREATE_TOPICS]
    answer = await ask(cluster, 0, ApiKey.CREATE_TOPICS, 5, topics=(ct.CreatableTopic(
        name=TOPIC, num_partitions=6, replication_factor=1),))
    assert answer.topics[0].error_code == E.NONE
    replicas = {p.partition_index: set(p.replica_nodes) for p in (await metadata(cluster)).topics[0].partitions}
    for node in range(3):
        described = await ask(cluster, node, ApiKey.DESCRIBE_LOG_DIRS, 4, topics=None)
        held = {p.partition_index for t in described.results[0].topics for p in t.partitions}
        assert held == {p for p, nodes in replicas.items() if node in nodes}
    refused = await ask(cluster, 0, ApiKey.CREATE_TOPICS, 5, topics=(ct.CreatableTopic(
        name="too-many", num_partitions=1, replication_factor=4),))
    assert (refused.topics[0].error_code, refused.topics[0].error_message) == (     # Kafka 4.3's words
        E.INVALID_REPLICATION_FACTOR, "Unable to replicate the partition 4 time(s): The target replication factor "
        "of 4 cannot be reached because only 3 broker(s) are registered or some brokers have all their log "
        "directories cordoned.")


def test_a_cluster_data_dir_restarts_with_what_every_owner_acknowledged(tmp_path):
    """Offsets committed on a cluster whose coordinator moved survive a crash-restart of the
    cluster (placement back to the initial one), and the same data dir served by one node."""
    from kafka_client.blocking import BlockingClient
    from broker.testing.embedded import EmbeddedBroker

    oc, of = R[ApiKey.OFFSET_COMMIT], R[ApiKey.OFFSET_FETCH]

    def coordinator_port(broker, group: str) -> int:
        client = BlockingClient("127.0.0.1", broker.ports[0] if broker.ports else broker.port)
        try:
            return client.call(ApiKey.FIND_COORDINATOR, 3, R[ApiKey.FIND_COORDINATOR](key=group)).port
        finally:
            client.close()

    def call(broker, api_key, version, request):
        for _ in range(200):                # COORDINATOR_LOAD_IN_PROGRESS while a shard loads
            client = BlockingClient("127.0.0.1", coordinator_port(broker, GROUP))
            try:
                answer = client.call(api_key, version, request)
            finally:
                client.close()
            errors = {getattr(answer, "error_code", 0)} | {p.error_code for t in answer.topics for p in t.partitions}
            if E.COORDINATOR_LOAD_IN_PROGRESS not in errors:
                return answer
            time.sleep(0.01)
        raise AssertionError(answer)

    def commit(broker, offset: int) -> None:
        answer = call(broker, ApiKey.OFFSET_COMMIT, 8, oc(
            group_id=GROUP, generation_id_or_member_epoch=-1, member_id="", topics=(oc.OffsetCommitRequestTopic(
                name=TOPIC, partitions=(oc.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
                    partition_index=0, committed_offset=offset),)),)))
        assert answer.topics[0].partitions[0].error_code == E.NONE

    def committed(broker) -> int:
        answer = call(broker, ApiKey.OFFSET_FETCH, 7, of(group_id=GROUP, topics=(
            of.OffsetFetchRequestTopic(name=TOPIC, partition_indexes=(0,)),)))
        return answer.topics[0].partitions[0].committed_offset

    cluster = EmbeddedBroker(tmp_path, {"auto.create.topics.enable": "true"}, nodes=3).start()
    try:
        client = BlockingClient("127.0.0.1", cluster.ports[0])
        client.call(ApiKey.CREATE_TOPICS, 5, R[ApiKey.CREATE_TOPICS](topics=(R[ApiKey.CREATE_TOPICS].CreatableTopic(
            name=TOPIC, num_partitions=1, replication_factor=3),)))
        client.close()
        commit(cluster, 5)
        owner = next(n for n in range(3) if cluster.ports[n] == coordinator_port(cluster, GROUP))
        cluster.faults.move_coordinator(group=GROUP, node=(owner + 1) % 3)
        commit(cluster, 9)                                  # acknowledged by the new owner
        cluster.restart(crash=True)
        assert coordinator_port(cluster, GROUP) == cluster.ports[owner]      # the initial placement
        assert committed(cluster) == 9
    finally:
        cluster.stop()
    single = EmbeddedBroker(tmp_path).start()
    try:
        assert committed(single) == 9
        assert not any(os.listdir(tmp_path / "nodes" / n) for n in os.listdir(tmp_path / "nodes"))
    finally:
        single.stop()


async def test_a_leader_move_starts_share_partitions_again_from_their_share_state(cluster):
    """Issue 28: a share-partition lives on its partition's leader. When the leader moves, the
    new leader starts it from the share state written so far, as Kafka's new leader loads it
    from its share coordinator: what was acknowledged stays so, a released record comes back
    at the count written, and records only acquired (never written) come back as fresh."""
    from tests.support.share_wire import ACCEPT, RELEASE, acquired, share_fetch, share_member
    await create_topic(cluster, partitions=1)
    topic = (await metadata(cluster)).topics[0]
    leader, group = topic.partitions[0].leader_id, "cluster-share"
    coordinator_node = (await coordinator(cluster, group)).node_id
    member = await TrioClient.connect(cluster.ports[coordinator_node])
    data = await TrioClient.connect(cluster.ports[leader])
    try:
        _, topic_id = await share_member(member, group, TOPIC)
        assert acquired(await share_fetch(data, group, topic_id, 0, max_wait_ms=300)) == []   # starts at the end
        pr = R[ApiKey.PRODUCE]
        assert (await data.call(ApiKey.PRODUCE, 11, pr(acks=-1, timeout_ms=1000, topic_data=(pr.TopicProduceData(
            name=TOPIC, partition_data=(pr.TopicProduceData.PartitionProduceData(
                index=0, records=batch([b"x"] * 6)),)),)))).responses[0].partition_responses[0].error_code == E.NONE
        assert acquired(await share_fetch(data, group, topic_id, 1)) == [(0, 5, 1)]
        answer = await share_fetch(data, group, topic_id, 2, acks=[(0, 1, ACCEPT), (2, 2, RELEASE)], max_wait_ms=0)
        assert answer.responses[0].partitions[0].acknowledge_error_code == E.NONE, answer
        new = (leader + 1) % 3
        await cluster.control.execute("move-leader", topic=TOPIC, partition=0, node=new)
        refused = (await share_fetch(data, group, topic_id, 3, max_wait_ms=0)).responses[0].partitions[0]
        assert (refused.error_code, refused.current_leader.leader_id) == (E.NOT_LEADER_OR_FOLLOWER, new)
    finally:
        await data.aclose()
    data = await TrioClient.connect(cluster.ports[new])
    try:
        assert acquired(await share_fetch(data, group, topic_id, 0)) == [(2, 2, 2), (3, 5, 1)]
    finally:
        await data.aclose()
        await member.aclose()


async def test_a_streams_group_moves_with_its_coordinator(cluster):
    """Issue 29: a streams group's records move with its shard: on the new owner the members go
    on at their epochs with their tasks, and the group describes the same."""
    from tests.support.streams_wire import StreamsMember
    group = "cluster-streams"
    await create_topic(cluster)
    old = (await coordinator(cluster, group)).node_id
    new = (old + 1) % 3
    client = await TrioClient.connect(cluster.ports[old])
    describe = REQUESTS[ApiKey.STREAMS_GROUP_DESCRIBE].cls(group_ids=(group,), include_authorized_operations=False)
    try:
        members = [StreamsMember(client, group, f"member-{n}", TOPIC) for n in range(2)]
        for m in members:
            await m.join()
        for _ in range(3):
            for m in members:
                await m.beat()
        before = (await client.call(ApiKey.STREAMS_GROUP_DESCRIBE, 0, describe)).groups[0]
        assert before.group_state == "Stable" and sorted(len(m.tasks) for m in members) == [1, 2], before
        assert f"moved: [{shard_for(group)}]" in await cluster.control.execute("move-coordinator", group=group,
                                                                                node=new)
        assert (await members[0].beat()).error_code == E.NOT_COORDINATOR
    finally:
        await client.aclose()
    client = await TrioClient.connect(cluster.ports[new])
    try:
        for m in members:
            m.client = client
            for _ in range(200):
                answer = await m.beat()
                if answer.error_code != E.COORDINATOR_LOAD_IN_PROGRESS:
                    break
                await trio.sleep(0.01)
            assert (answer.error_code, answer.member_epoch, answer.active_tasks) == (E.NONE, before.group_epoch, None)
        assert (await client.call(ApiKey.STREAMS_GROUP_DESCRIBE, 0, describe)).groups[0] == before
    finally:
        await client.aclose()
