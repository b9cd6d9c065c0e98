"""FENCED_INSTANCE_ID: two running consumers configured with the same group.instance.id.

Consumer C1 (confluent-kafka / librdkafka) is a static member, group.instance.id=worker-1,
Stable in generation N. A second process, C2, starts with the same group.instance.id (a
copy-pasted config, or a new deployment started before the old one stopped). The coordinator
treats C2 as worker-1 coming back (KIP-345): it gives the instance a new member id and C2
the stored assignment, in the same generation, without a rebalance. C1 still holds the old
member id: its next Heartbeat is answered FENCED_INSTANCE_ID, which librdkafka treats as fatal.
"""

import re

from recipe import ClientLog, NotReproduced, client, make_topic, poll_until, result, run, unique

INSTANCE = "worker-1"
GENERATION = r"JoinGroup response: GenerationId (-?\d+)"


def recipe(broker) -> None:
    from confluent_kafka import Consumer, KafkaError

    topic, group = unique("invoices"), unique("static")
    make_topic(broker.bootstrap, topic, partitions=2)

    def consumer(name: str):
        log = ClientLog(f"rdkafka.{name}")
        c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "client.id": name,
                      "group.instance.id": INSTANCE, "session.timeout.ms": 6000,
                      "heartbeat.interval.ms": 300, "enable.auto.commit": False,
                      "debug": "cgrp", "logger": log.logger})
        c.subscribe([topic])
        return c, log

    c1, log1 = consumer("C1")
    c2 = None
    try:
        if not poll_until(lambda: c1.assignment(), [c1], 10):
            raise NotReproduced("C1 never got an assignment")
        gen1 = _generation(log1)
        client(f"C1 (group.instance.id={INSTANCE}) is in generation {gen1} with partitions "
               f"{sorted(p.partition for p in c1.assignment())}")

        c2, log2 = consumer("C2")
        fatal = []

        def c1_fenced():
            msg = c1.poll(0.05)
            if msg is not None and msg.error() and msg.error().code() == KafkaError._FATAL:
                fatal.append(msg.error())
            return fatal

        if not poll_until(lambda: c2.assignment() and c1_fenced(), [c2], 10):
            raise NotReproduced("C1 was never fenced" if c2.assignment() else "C2 never got an assignment")
        gen2 = _generation(log2)
        client(f"C2 (same group.instance.id) joined: generation {gen2}, partitions "
               f"{sorted(p.partition for p in c2.assignment())}")
        for line in log1.find(r"heartbeat error|FATAL|fenced"):
            client(f"C1 librdkafka log: {line.split(': ', 1)[1][:200]}")
        fenced_text = KafkaError(KafkaError.FENCED_INSTANCE_ID).str()
        client(f"C1.poll() returned {fatal[0]!r}")
        if fenced_text not in fatal[0].str():
            raise NotReproduced(f"C1's fatal error is not FENCED_INSTANCE_ID ({fenced_text!r})")
        broker.show(group, expect=rf"group {re.escape(group)}: .* answered FENCED_INSTANCE_ID")
        result("FENCED_INSTANCE_ID",
               f"C1 held {INSTANCE} in generation {gen1}; C2 took it over in generation {gen2} "
               "(no rebalance); C1's next heartbeat was fenced and C1 is dead (fatal error)",
               "a static member's identity is its group.instance.id: when a member joins with a "
               "known instance id, the coordinator assumes the old process is gone, replaces its "
               "member id and fences every later request that carries the old one.",
               "give each process its own group.instance.id (derive it from a stable host or pod "
               "name, never from shared config), and stop the old instance before its replacement "
               "starts. A fenced consumer cannot recover: close it and create a new one.")
    finally:
        if c2 is not None:
            c2.close()
        c1.close()


def _generation(log: ClientLog) -> int | None:
    """The generation in librdkafka's last ``JoinGroup response`` debug line."""
    answers = [re.search(GENERATION, line) for line in log.find(GENERATION)]
    return int(answers[-1].group(1)) if answers else None


if __name__ == "__main__":
    run(recipe, __doc__.splitlines()[0])
