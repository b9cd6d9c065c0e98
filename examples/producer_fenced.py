"""PRODUCER_FENCED: a zombie transactional producer fenced by its new incarnation.

P1 (confluent-kafka / librdkafka, transactional.id=payments-1) begins a transaction and sends
records, then stalls (a GC pause, a network partition, a stuck host). Its replacement P2
starts with the same transactional.id: its InitProducerId bumps the id's producer epoch, and
the coordinator aborts P1's open transaction under the new epoch. When P1 wakes up and commits,
the coordinator answers PRODUCER_FENCED, which librdkafka treats as fatal. Readers with
isolation.level=read_committed never see P1's records.
"""

import time

from recipe import NotReproduced, client, make_topic, result, run, unique


def recipe(broker) -> None:
    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

    topic, tid = unique("payments"), unique("payments-1")
    make_topic(broker.bootstrap, topic, partitions=1)

    def producer(name: str):
        p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": tid, "client.id": name})
        p.init_transactions(10)
        return p

    p1 = producer("P1")
    p1.begin_transaction()
    p1.produce(topic, value=b"from the zombie")
    p1.flush(10)
    client(f"P1 (transactional.id={tid}) has a transaction open with one record, then stalls")
    p2 = producer("P2")
    client("P2 started with the same transactional.id: init_transactions() returned")
    p2.begin_transaction()
    p2.produce(topic, value=b"from the new incarnation")
    p2.commit_transaction(10)
    client("P2 committed its transaction")
    try:
        p1.commit_transaction(10)
        raise NotReproduced("P1's commit succeeded")
    except KafkaException as e:
        error = e.args[0]
        client(f"P1.commit_transaction() raised {error.name()} (fatal={error.fatal()}): {error.str()}")
        if not error.fatal():
            raise NotReproduced(f"P1's error is not fatal: {error.name()}")
    reader = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": unique("reader"),
                       "isolation.level": "read_committed", "auto.offset.reset": "earliest"})
    reader.assign([TopicPartition(topic, 0, 0)])
    seen, deadline = [], time.monotonic() + 5
    while time.monotonic() < deadline and not seen:
        msg = reader.poll(0.2)
        if msg is not None and msg.error() is None:
            seen.append(msg.value())
    reader.close()
    client(f"a read_committed reader sees {seen}")
    for line in broker.log(rf"transactional id {tid}"):
        print(f"  broker| {line}", flush=True)
    result("PRODUCER_FENCED",
           f"P2's InitProducerId fenced P1 and aborted its open transaction; P1's commit failed fatally; "
           f"readers see only {seen}",
           "a transactional.id names one logical producer: each new incarnation bumps its epoch, "
           "and the coordinator refuses everything the older epoch sends, so a zombie can never "
           "commit a transaction after its replacement took over.",
           "treat PRODUCER_FENCED as fatal: close the producer and stop the work it was doing "
           "(its replacement owns it now). Give every concurrent producer its own transactional.id.")
    p2.flush(1)


if __name__ == "__main__":
    run(recipe, __doc__.splitlines()[0])
