"""Two consumers sharing one partition (KIP-932): in a share group both members are assigned
the topic's single partition (a consumer group would give it to one of them), and the broker
hands each record to one member at a time: together they receive every record, none twice.

Two confluent-kafka ShareConsumers in implicit acknowledgement mode poll in turn, while a
producer writes the records in 20 batches of 10 (the broker hands records out a whole batch at
a time).
"""

import threading
import time

from recipe import NotReproduced, result, run, say, unique
from share_recipe import share_consumer, share_group

RECORDS = 200


def produce_slowly(bootstrap: str, topic: str) -> None:
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bootstrap})
    for batch in range(RECORDS // 10):
        for i in range(10):
            producer.produce(topic, value=b"r%d" % (batch * 10 + i), partition=0)
        producer.flush(10)
        time.sleep(0.05)


def recipe(broker) -> None:
    topic, group = unique("shared"), unique("shared-group")
    share_group(broker.bootstrap, topic, group, 0)
    members = {name: share_consumer(broker.bootstrap, group, topic, explicit=False) for name in ("A", "B")}
    got = {name: [] for name in members}
    for consumer in members.values():            # both join and fetch before records arrive
        consumer.poll(0.5)
    producing = threading.Thread(target=produce_slowly, args=(broker.bootstrap, topic))
    producing.start()
    deadline = time.monotonic() + 20
    try:
        while sum(map(len, got.values())) < RECORDS and time.monotonic() < deadline:
            for name, consumer in members.items():
                got[name] += [m.offset() for m in consumer.poll(0.1) if m.error() is None]
    finally:
        producing.join()
        for consumer in members.values():
            consumer.close()
    offsets = got["A"] + got["B"]
    say(f"  client| A received {len(got['A'])} records, B {len(got['B'])}")
    if len(offsets) != RECORDS or len(set(offsets)) != RECORDS or not got["A"] or not got["B"]:
        raise NotReproduced(f"{len(offsets)} deliveries of {len(set(offsets))} records")
    result("ONE PARTITION, TWO CONSUMERS", f"A received {len(got['A'])} and B {len(got['B'])} of "
           f"partition 0's {RECORDS} records, none twice",
           "a share group assigns a partition to several members; the broker locks each batch of "
           "records it hands out to one of them",
           "scale a share group past its partition count by adding members; order across "
           "members is not kept")


if __name__ == "__main__":
    run(recipe, "Two share consumers on one partition")
