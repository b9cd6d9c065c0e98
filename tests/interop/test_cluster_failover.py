"""Issue 14 acceptance: groups of real clients on a 3-node cluster follow the broker moving under
them. Their coordinator moves, its node stops, the leaders of the partitions they read move; each
time the clients find the new coordinator or leader by themselves, the group settles again, and
every record is consumed and committed exactly once, redelivered only from the uncommitted window.

Consumers run in threads of this process (kafka-python 3.0.12 and confluent-kafka), committing
synchronously after each batch; the cluster is the ``groupbroker`` fixture with ``nodes=3``.
"""

from __future__ import annotations

import threading
import time

import pytest

from kafka_client.blocking import BlockingClient
from protocol.api_keys import ApiKey
from protocol.messages import REQUESTS
from tests.support.processes import BatchRecorder, check_exactly_once, import_client, wait_until

TOPIC, PARTITIONS, GROUP = "orders", 6, "failover-group"
PROPS = {"group.initial.rebalance.delay.ms": "50", "group.min.session.timeout.ms": "1000"}


def ask(broker, api_key: int, version: int, node: int = 0, **fields):
    """One request to a node of ``broker`` (node 0, as a client's bootstrap would), its answer."""
    client = BlockingClient(broker.host, broker.ports[node], client_id="failover-test", timeout=10)
    try:
        return client.call(api_key, version, REQUESTS[api_key].cls(**fields))
    finally:
        client.close()


def coordinator_of(broker, group: str) -> int:
    """The node FindCoordinator names for ``group`` now."""
    answer = ask(broker, ApiKey.FIND_COORDINATOR, 3, key=group)
    assert answer.error_code == 0, answer
    return answer.node_id


def committed_offsets(broker, group: str) -> dict[int, int]:
    """Each partition's committed offset, as the group's coordinator answers OffsetFetch (retried
    while it loads)."""
    of = REQUESTS[ApiKey.OFFSET_FETCH].cls
    for _ in range(100):
        answer = ask(broker, ApiKey.OFFSET_FETCH, 7, node=coordinator_of(broker, group), group_id=group,
                     topics=(of.OffsetFetchRequestTopic(name=TOPIC, partition_indexes=tuple(range(PARTITIONS))),))
        if answer.error_code == 0:
            return {p.partition_index: p.committed_offset for p in answer.topics[0].partitions}
        time.sleep(0.05)
    raise AssertionError(f"OffsetFetch kept failing: {answer}")


def leaders_of(broker, topic: str) -> dict[int, int]:
    """Each partition's leader as Metadata tells it."""
    answer = ask(broker, ApiKey.METADATA, 12, topics=(REQUESTS[ApiKey.METADATA].cls.MetadataRequestTopic(name=topic),))
    return {p.partition_index: p.leader_id for p in answer.topics[0].partitions}


class Members:
    """N group members in threads, each reading in a loop and committing each batch."""

    def __init__(self, make, count: int):
        self.recorders = [BatchRecorder(f"m{i}") for i in range(count)]
        self.assigned: list[set[int]] = [set() for _ in range(count)]
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(make, i), daemon=True) for i in range(count)]

    def __enter__(self) -> Members:
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(30)

    def _run(self, make, i: int) -> None:
        try:
            make(i, self.recorders[i], self.assigned, self._stop)
        except Exception as e:      # reported by the test
            self.errors.append(f"m{i}: {type(e).__name__}: {e}")

    def consumed(self) -> set:
        return {r for rec in self.recorders for b in rec.batches() if b["committed"] for r in b["records"]}

    def settled(self) -> bool:
        owned = sorted(p for a in self.assigned for p in a)
        return owned == list(range(PARTITIONS)) and all(self.assigned)


def kafka_python_member(bootstrap: str):
    kafka = import_client("kafka")

    def run(i, recorder, assigned, stop) -> None:
        class Listener(kafka.ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked):
                assigned[i] = set()

            def on_partitions_assigned(self, partitions):
                assigned[i] = {tp.partition for tp in partitions}

        consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap, group_id=GROUP, enable_auto_commit=False,
                                       auto_offset_reset="earliest", session_timeout_ms=6000,
                                       heartbeat_interval_ms=300, max_poll_records=20,
                                       metadata_max_age_ms=5000, retry_backoff_ms=50,
                                       client_id=f"kp-{i}")
        consumer.subscribe([TOPIC], listener=Listener())
        try:
            while not stop.is_set():
                polled = consumer.poll(timeout_ms=200)
                records = [(r.partition, r.offset) for rs in polled.values() for r in rs]
                if not records:
                    continue
                entry = recorder.batch(records)
                try:
                    consumer.commit()
                    recorder.committed(entry, True)
                except kafka.errors.KafkaError as e:
                    recorder.committed(entry, False, e)
        finally:
            consumer.close()
    return run


def confluent_member(bootstrap: str):
    ck = import_client("confluent_kafka")

    def run(i, recorder, assigned, stop) -> None:
        consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": False,
                                "auto.offset.reset": "earliest", "session.timeout.ms": 6000,
                                "heartbeat.interval.ms": 300, "topic.metadata.refresh.interval.ms": 5000,
                                "client.id": f"ck-{i}", "log_level": 3})

        def on_assign(c, partitions):
            assigned[i] = {tp.partition for tp in partitions}

        def on_revoke(c, partitions):
            assigned[i] = set()

        consumer.subscribe([TOPIC], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke)
        try:
            while not stop.is_set():
                messages = consumer.consume(num_messages=20, timeout=0.2)
                records = [(m.partition(), m.offset()) for m in messages if m.error() is None]
                if not records:
                    continue
                entry = recorder.batch(records)
                try:
                    consumer.commit(asynchronous=False)
                    recorder.committed(entry, True)
                except ck.KafkaException as e:
                    recorder.committed(entry, False, e)
        finally:
            consumer.close()
    return run


def create_topic(bootstrap: str) -> None:
    """The topic, each partition on three replicas (Kafka's default.replication.factor is 1:
    a partition whose only replica is on a stopped node has no leader until it starts)."""
    admin_module = import_client("confluent_kafka.admin")
    admin = admin_module.AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([admin_module.NewTopic(TOPIC, PARTITIONS, 3)]).values():
        future.result(15)


def produce(bootstrap: str, start: int, count: int) -> set:
    """``count`` records round-robin over the partitions (acks=all, retried by the client
    across leader changes); the (partition, offset) of each."""
    ck = import_client("confluent_kafka")
    producer = ck.Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "log_level": 3})
    delivered: set = set()

    def done(err, msg) -> None:
        assert err is None, err
        delivered.add((msg.partition(), msg.offset()))

    for n in range(start, start + count):
        producer.produce(TOPIC, value=b"v%d" % n, partition=n % PARTITIONS, on_delivery=done)
    assert producer.flush(30) == 0
    return delivered


@pytest.mark.groupbroker(props=PROPS, nodes=3)
@pytest.mark.parametrize("client", ["kafka-python", "confluent-kafka"])
def test_group_follows_coordinator_and_leader_moves(groupbroker, client):
    bootstrap = groupbroker.bootstrap_servers
    make = (kafka_python_member if client == "kafka-python" else confluent_member)(bootstrap)
    create_topic(bootstrap)
    produced = produce(bootstrap, 0, 60)
    with Members(make, 3) as members:
        def caught_up(what: str) -> None:
            wait_until(lambda: members.settled() and produced <= members.consumed(), 60,
                       f"{client}: every record consumed and committed {what} ({members.errors})")

        caught_up("at the start")

        def kept(before: dict[int, int]) -> None:
            """What was committed before a move is there after it (commits only move forward)."""
            after = committed_offsets(groupbroker, GROUP)
            assert all(after[p] >= offset >= 0 for p, offset in before.items()), (before, after)

        # each move happens while the members read and commit a fresh batch
        # 1. the coordinator moves to another node
        produced |= produce(bootstrap, 60, 30)
        offsets = committed_offsets(groupbroker, GROUP)
        before = coordinator_of(groupbroker, GROUP)
        target = next(n for n in range(3) if n != before)
        groupbroker.faults.move_coordinator(group=GROUP, node=target)
        produced |= produce(bootstrap, 90, 30)
        caught_up("after the coordinator moved")
        assert coordinator_of(groupbroker, GROUP) == target
        kept(offsets)
        # 2. the coordinator's node stops
        produced |= produce(bootstrap, 120, 30)
        offsets = committed_offsets(groupbroker, GROUP)
        groupbroker.faults.stop_node(node=target)
        produced |= produce(bootstrap, 150, 30)
        caught_up(f"after node {target} stopped")
        assert coordinator_of(groupbroker, GROUP) != target
        kept(offsets)
        # 3. every partition's leader moves to another running node
        produced |= produce(bootstrap, 180, 30)
        offsets = committed_offsets(groupbroker, GROUP)
        live = [n for n in range(3) if n != target]
        for p, leader in leaders_of(groupbroker, TOPIC).items():
            groupbroker.faults.move_leader(topic=TOPIC, partition=p, node=next(n for n in live if n != leader))
        assert all(n in live for n in leaders_of(groupbroker, TOPIC).values())
        produced |= produce(bootstrap, 210, 30)
        caught_up("after the leaders moved")
        kept(offsets)
        groupbroker.faults.start_node(node=target)
        produced |= produce(bootstrap, 240, 30)
        caught_up(f"after node {target} started again")
        assert committed_offsets(groupbroker, GROUP) == {p: 45 for p in range(PARTITIONS)}
    assert not members.errors, members.errors
    summary = check_exactly_once(produced, members.recorders)
    assert summary["committed"] == 270


def describe_transaction(broker, tid: str, node: int):
    """DescribeTransactions of ``tid`` as ``node`` answers it."""
    return ask(broker, ApiKey.DESCRIBE_TRANSACTIONS, 0, node=node, transactional_ids=(tid,)).transaction_states[0]


@pytest.mark.groupbroker(props=PROPS, nodes=3)
def test_transaction_coordinator_failover_reloads_the_state_log(groupbroker):
    """confluent-kafka's transactional producer; its coordinator's node stops while a commit's
    markers are held: the new coordinator answers COORDINATOR_LOAD_IN_PROGRESS until the old one
    has finished them, then replays the state log (now in its own folder) and serves the id;
    the producer goes on with its next transaction there."""
    import os

    ck = import_client("confluent_kafka")
    bootstrap, tid = groupbroker.bootstrap_servers, "failover-txn"
    create_topic(bootstrap)
    owner = ask(groupbroker, ApiKey.FIND_COORDINATOR, 3, key=tid, key_type=1).node_id
    producer = ck.Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "log_level": 3})
    producer.init_transactions(15)
    producer.begin_transaction()
    producer.produce(TOPIC, value=b"first", partition=0)
    groupbroker.faults.hold_markers(on=True)
    producer.commit_transaction(15)                    # answered; its markers wait
    groupbroker.faults.stop_node(node=owner)
    new = ask(groupbroker, ApiKey.FIND_COORDINATOR, 3, node=(owner + 1) % 3, key=tid, key_type=1).node_id
    assert new != owner
    assert describe_transaction(groupbroker, tid, new).error_code == 14      # COORDINATOR_LOAD_IN_PROGRESS
    groupbroker.faults.hold_markers(on=False)
    state = wait_until(lambda: (s := describe_transaction(groupbroker, tid, new)).error_code == 0 and s, 10,
                       "the new coordinator to load")
    assert state.transaction_state == "CompleteCommit"
    partition = next(p for p in range(50) if os.path.isdir(os.path.join(
        groupbroker.data_dir, "nodes", str(new), f"__transaction_state-{p}")))
    assert not os.path.exists(os.path.join(groupbroker.data_dir, "nodes", str(owner), f"__transaction_state-{partition}"))
    producer.begin_transaction()                       # the producer finds its new coordinator
    producer.produce(TOPIC, value=b"second", partition=0)
    producer.commit_transaction(15)
    reader = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "txn-reader", "isolation.level": "read_committed",
                          "auto.offset.reset": "earliest", "log_level": 3})
    reader.assign([ck.TopicPartition(TOPIC, 0, 0)])
    seen: list[bytes] = []
    wait_until(lambda: [seen.append(m.value()) for m in reader.consume(10, 0.2) if m.error() is None] is not None
               and len(seen) >= 2, 15, "both committed records")
    reader.close()
    assert seen == [b"first", b"second"]
    assert describe_transaction(groupbroker, tid, new).producer_epoch == state.producer_epoch
