"""The KIP-447 recipe: a consume-transform-produce member that lost its partitions has its
``send_offsets_to_transaction`` refused, and the new owner goes on exactly once.

Two ways to lose them, each with the error Kafka's classic group gives:

* it stops polling past ``max.poll.interval.ms``: librdkafka leaves the group, so the
  member id in its group metadata is gone: UNKNOWN_MEMBER_ID. The heir joins only once the
  zombie has left: had it joined first, the coordinator's rebalance timeout (also
  ``max.poll.interval.ms``) would race librdkafka's own poll timer, and when the removal wins by
  a few ms, librdkafka 2.16's ``close()`` of the zombie never returns (seen with a loaded CPU);
* a rebalance hands its partitions on while it still holds the metadata of the generation
  before: ILLEGAL_GENERATION.
"""

from __future__ import annotations

import time

import pytest

from tests.interop.test_transactions_confluent import read_all, transactional
from tests.support.confluent import closed_within, create_topics, produce
from tests.support.processes import import_client

ck = import_client("confluent_kafka")


def member(bootstrap: str, name: str):
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "zombies", "client.id": name,
                            "auto.offset.reset": "earliest", "enable.auto.commit": False,
                            "isolation.level": "read_committed", "session.timeout.ms": 2000,
                            "heartbeat.interval.ms": 300, "max.poll.interval.ms": 3000,
                            "partition.assignment.strategy": "range", "fetch.wait.max.ms": 100})
    consumer.subscribe(["z-in"])
    return consumer, transactional(bootstrap, f"z-{name}")


def consume(consumer, seconds: float, want: int | None = None) -> list:
    got, deadline = [], time.monotonic() + seconds
    while time.monotonic() < deadline and (want is None or len(got) < want):
        got += [m for m in consumer.consume(100, 0.1) if m.error() is None]
    return got


def transform(producer, consumer, records, metadata) -> None:
    producer.begin_transaction()
    for m in records:
        producer.produce("z-out", value=b"%d:%d" % (m.partition(), m.offset()), partition=m.partition())
    producer.send_offsets_to_transaction(consumer.position(consumer.assignment()), metadata, 10)
    producer.commit_transaction(10)


@pytest.mark.parametrize("how,error", [("pause", "UNKNOWN_MEMBER_ID"), ("rebalance", "ILLEGAL_GENERATION")])
def test_zombie_member_is_refused_and_the_new_owner_goes_on_exactly_once(broker, how, error):
    create_topics(broker.bootstrap, ("z-in", 2), ("z-out", 2))
    produce(broker.bootstrap, "z-in", 20, 2)
    zombie, zombie_producer = member(broker.bootstrap, "zombie")
    records = consume(zombie, 20, want=20)
    assert len(records) == 20
    stale = zombie.consumer_group_metadata()
    positions = zombie.position(zombie.assignment())
    zombie_producer.begin_transaction()
    for m in records:
        zombie_producer.produce("z-out", value=b"zombie", partition=m.partition())
    if how == "pause":
        broker.wait_for_log(r"group zombies: .*: members left the group", timeout=15)
    heir, heir_producer = member(broker.bootstrap, "heir")
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and len(heir.assignment()) < (2 if how == "pause" else 1):
        heir.consume(100, 0.1)
        if how == "rebalance":
            zombie.consume(100, 0.1)                 # stays a member: rejoins the new generation
    assert heir.assignment(), "the heir never got partitions"
    with pytest.raises(ck.KafkaException) as refused:
        zombie_producer.send_offsets_to_transaction(positions, stale, 10)
    assert refused.value.args[0].name() == error and refused.value.args[0].txn_requires_abort()
    zombie_producer.abort_transaction(10)
    if how == "rebalance":                           # as an EOS application does after an abort:
        for tp in zombie.committed(zombie.assignment(), 10):     # back to the committed offsets
            tp.offset = tp.offset if tp.offset >= 0 else ck.OFFSET_BEGINNING
            zombie.seek(tp)
    # the heir (with the zombie's share, once it has it) transforms every record exactly once
    owners = [(heir, heir_producer)] + ([(zombie, zombie_producer)] if how == "rebalance" else [])
    deadline = time.monotonic() + 20
    done = 0
    while done < 20 and time.monotonic() < deadline:
        for consumer, producer in owners:
            batch = consume(consumer, 0.3)
            if batch:
                transform(producer, consumer, batch, consumer.consumer_group_metadata())
                done += len(batch)
    values = read_all(broker.bootstrap, "z-out", 2, "read_committed", expect=20)
    assert b"zombie" not in values
    assert sorted(values) == sorted(b"%d:%d" % (m.partition(), m.offset()) for m in records)
    for consumer, _ in owners + ([] if how == "rebalance" else [(zombie, None)]):
        closed_within(consumer, 15)
