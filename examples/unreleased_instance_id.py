"""UNRELEASED_INSTANCE_ID: a static member started twice in a consumer group (KIP-848).

Consumer C1 (confluent-kafka / librdkafka, group.protocol=consumer) is a static member,
group.instance.id=worker-1, holding its partitions. A second process, C2, starts with the same
group.instance.id (a copy-pasted config, or a new deployment started before the old one
stopped). With the consumer protocol, unlike the classic one, the newcomer does not take the
instance over: a static member may only rejoin once its previous incarnation has released the
instance id by leaving with member epoch -2 (Kafka's throwIfInstanceIdIsUnreleased). C2's
joining heartbeat is answered UNRELEASED_INSTANCE_ID, which librdkafka treats as fatal; C1
keeps its partitions, untouched. Once C1 closes (a leave with epoch -2), a new consumer with
the same instance id, C3, gets C1's partitions back without a rebalance of the others.
"""

import re

from recipe import ClientLog, NotReproduced, client, make_topic, poll_until, result, run, unique

INSTANCE = "worker-1"


def recipe(broker) -> None:
    from confluent_kafka import Consumer, KafkaError

    topic, group = unique("receipts"), unique("static848")
    make_topic(broker.bootstrap, topic, partitions=2)

    def consumer(name: str):
        log = ClientLog(f"rdkafka.{name}")
        c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "client.id": name,
                      "group.instance.id": INSTANCE, "group.protocol": "consumer",
                      "enable.auto.commit": False, "debug": "cgrp", "logger": log.logger})
        c.subscribe([topic])
        return c, log

    c1, _ = consumer("C1")
    c2 = c3 = None
    try:
        if not poll_until(lambda: c1.assignment(), [c1], 10):
            raise NotReproduced("C1 never got an assignment")
        held = _partitions(c1)
        client(f"C1 (group.instance.id={INSTANCE}, member {c1.memberid()}) holds partitions {held}")

        c2, log2 = consumer("C2")
        fatal = []

        def c2_failed():
            msg = c2.poll(0.05)
            if msg is not None and msg.error() and msg.error().code() == KafkaError._FATAL:
                fatal.append(msg.error())
            return fatal
        if not poll_until(c2_failed, [c1], 10):
            raise NotReproduced(f"C2 was never refused (assignment {_partitions(c2)})")
        for line in log2.find(r"FATAL|fatal error"):
            client(f"C2 librdkafka log: {line.split(': ', 1)[1][:200]}")
        client(f"C2.poll() returned {fatal[0]!r}")
        unreleased = KafkaError(KafkaError.UNRELEASED_INSTANCE_ID).str()
        if unreleased not in fatal[0].str():
            raise NotReproduced(f"C2's fatal error is not UNRELEASED_INSTANCE_ID ({unreleased!r})")
        poll_until(lambda: None, [c1], 1.0)
        still = _partitions(c1)
        client(f"C1 still holds {still}; C2 holds {_partitions(c2)}")
        if still != held:
            raise NotReproduced(f"C1's partitions changed from {held} to {still}")
        c2.close()
        c2 = None

        client("C1 closes (its leave heartbeat has member epoch -2: the instance id is released); "
               f"C3 starts with group.instance.id={INSTANCE}")
        c1.close()
        c1 = None
        c3, _ = consumer("C3")
        if not poll_until(lambda: c3.assignment(), [c3], 10):
            raise NotReproduced("C3 never got the released instance's partitions")
        client(f"C3 (member {c3.memberid()}) holds {_partitions(c3)}")
        broker.show(group, "static|instance", expect=rf"group {re.escape(group)}: static member .* rejoins")
        result("UNRELEASED_INSTANCE_ID",
               f"C1 held {INSTANCE} with partitions {held}; C2's join with the same instance id was "
               f"refused and C2 is dead (fatal error); C1 kept {still}",
               "with the consumer protocol a static member's instance id belongs to one running "
               "member until that member leaves with member epoch -2 (close() does that) or its "
               "session expires (it is removed). A second process with the same "
               "group.instance.id is refused instead of fencing the first one, as the classic "
               "protocol does (FENCED_INSTANCE_ID for the old member there).",
               "give each process its own group.instance.id (derive it from a stable host or pod "
               "name, never from shared config), and stop the old instance (close(), so it leaves "
               "with epoch -2) before its replacement starts; a replacement started after a crash "
               "is refused until the old member's session expires. A refused consumer cannot "
               "recover: close it and create a new one.")
    finally:
        for c in (c3, c2, c1):
            if c is not None:
                c.close()


def _partitions(c) -> list[int]:
    return sorted(tp.partition for tp in c.assignment())


if __name__ == "__main__":
    run(recipe, __doc__.splitlines()[0])
