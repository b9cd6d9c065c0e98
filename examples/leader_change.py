"""A partition's leader changes during consumption: the consumer follows it to the new broker.

On a 3-node groupbroker cluster, a kafka-python consumer reads a one-partition topic. The
partition's leadership moves to another node (as after a broker failure or a preferred-leader
election), with a new leader epoch. The consumer's next Fetch to the old leader, still a
replica, carries the old epoch and is answered FENCED_LEADER_EPOCH (Kafka checks the epoch
before leadership; a node with no replica answers NOT_LEADER_OR_FOLLOWER), naming the new
leader (KIP-951). The client refreshes its metadata, checks its position with
OffsetForLeaderEpoch on the new leader (KIP-320: was anything it read truncated?) and fetches from
there. Every record is read once, none lost.
"""

from recipe import ClientLog, NotReproduced, client, leader, make_topic, result, run, unique, wait_until


def recipe(broker) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    logs = ClientLog()
    topic = unique("readings")
    make_topic(broker.bootstrap, topic, partitions=1)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, client_id="reader", auto_offset_reset="earliest",
                             enable_auto_commit=False, fetch_max_wait_ms=200, retry_backoff_ms=50)
    read: list[int] = []

    def produce(first: int, count: int) -> None:
        for i in range(first, first + count):
            producer.send(topic, b"reading %d" % i, partition=0)
        producer.flush(10)

    def read_until(count: int) -> bool:
        def more():
            for records in consumer.poll(timeout_ms=200).values():
                read.extend(r.offset for r in records)
            return len(read) >= count
        return bool(wait_until(more, 15))

    try:
        consumer.assign([TopicPartition(topic, 0)])
        produce(0, 20)
        if not read_until(20):
            raise NotReproduced("the consumer never read the first records")
        old = leader(broker.bootstrap, topic, 0)
        client(f"the consumer read offsets 0-{read[-1]} from node {old}, the partition's leader")
        broker.faults.record(on=True)
        target = (old + 1) % 3
        client(f"the leader moves to node {target}: "
               + broker.faults.move_leader(topic=topic, partition=0, node=target))
        produce(20, 20)
        if not read_until(40):
            raise NotReproduced("the consumer did not read on from the new leader")
        now = leader(broker.bootstrap, topic, 0)
        client(f"the consumer read on to offset {read[-1]} from node {now}, the new leader")
        for line in logs.find(r"FencedLeaderEpoch|NotLeaderForPartition|Validating offsets|[Tt]runcat", "reader"):
            if line.startswith("kafka.consumer"):
                client(line)
        steps = [r for r in broker.faults.recorded() if r["client_id"] == "reader"
                 and r["api"] in ("Fetch", "Metadata", "OffsetForLeaderEpoch")]
        shown, previous = [], None
        for r in steps:                    # one line per change of request, node or answer
            step = (r["api"], r["node"], r["error"])
            if step != previous:
                shown.append(step)
                previous = step
        for api, node, error in shown[:8]:
            print(f"  broker| {api} to node {node} answered {error}", flush=True)
        if sorted(read) != list(range(40)):
            raise NotReproduced(f"records lost or read twice: {sorted(read)}")
        refused = next((e for api, node, e in shown if (api, node) == ("Fetch", old) and e != "NONE"), None)
        if now != target or refused is None:
            raise NotReproduced("the consumer never fetched from the old leader after the move")
        result(refused,
               f"a Fetch to node {old} after the move was refused; the consumer found node {target}, "
               f"checked its position there and read offsets 0-39 exactly once",
               "a partition's leader serves its reads and writes; when leadership moves (a broker "
               "fails, an election, a reassignment) the leader epoch is bumped; the old leader "
               "refuses requests carrying the old epoch (FENCED_LEADER_EPOCH) or, without one, "
               "with NOT_LEADER_OR_FOLLOWER, naming the new leader either way.",
               "nothing to fix: clients refresh their metadata and go on. Producers should use "
               "acks=all with retries (the default) so a write in flight during the change is "
               "retried on the new leader, not lost.")
    finally:
        consumer.close()
        producer.close()


if __name__ == "__main__":
    run(recipe, __doc__.splitlines()[0], nodes=3)
