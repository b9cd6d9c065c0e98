"""ILLEGAL_GENERATION: a slow consumer's commit after the group moved on (CommitFailedError).

Consumer A (kafka-python, static member ``group.instance.id``) reads a batch and then
"processes" it for longer than its max.poll.interval.ms. Meanwhile consumer B joins, so the
group rebalances without A (A is not polling, so it cannot rejoin) and forms the next
generation. When A finally commits, it still carries the old generation: the coordinator
answers ILLEGAL_GENERATION and kafka-python raises CommitFailedError.

A's heartbeat interval (20 s) is long on purpose: once kafka-python's heartbeat thread notices
the expired poll timer, the client forgets its generation and fails the commit locally without
asking the broker (as the Java client does); here the commit reaches the broker first, as it
does when processing ends before the heartbeat thread next wakes up.
"""

import re
import time

from recipe import (NotReproduced, Polling, client, join, make_topic, produce, result, run, unique,
                    wait_until)


def recipe(broker) -> None:
    from kafka import KafkaConsumer
    from kafka.errors import CommitFailedError, IllegalGenerationError

    topic, group = unique("orders"), unique("slow-consumer")
    make_topic(broker.bootstrap, topic, partitions=2)
    common = dict(bootstrap_servers=broker.bootstrap, group_id=group, enable_auto_commit=False,
                  auto_offset_reset="earliest")
    a = KafkaConsumer(client_id="A", group_instance_id="worker-a", session_timeout_ms=30000,
                      heartbeat_interval_ms=20000, max_poll_interval_ms=1000, **common)
    b = None
    try:
        join(a, topic, "A")
        produce(broker.bootstrap, topic, partitions=2, messages=10)
        got = wait_until(lambda: sum(len(r) for r in a.poll(timeout_ms=500).values()), 10)
        if not got:
            raise NotReproduced("A never received records")
        a.commit()
        gen_a = a.group_metadata().generation_id
        client(f"A joined generation {gen_a} (partitions {sorted(p.partition for p in a.assignment())}), "
               f"read {got} records, committed; now processing them for longer than "
               "max.poll.interval.ms=1000")
        stalled_at = time.monotonic()

        b = Polling(topic, client_id="B", session_timeout_ms=10000, heartbeat_interval_ms=500,
                    max_poll_interval_ms=2000, **common)
        gen_b = wait_until(b.generation, 10)
        if not gen_b:
            raise NotReproduced("B never got an assignment")
        held = set(b.partitions())
        client(f"B joined and holds partitions {sorted(held)} in generation {gen_b}, formed without A: "
               f"A did not rejoin within the rebalance timeout ({time.monotonic() - stalled_at:.1f}s "
               f"into its stall); partitions {sorted({0, 1} - held)} stay assigned to the absent static "
               "member A")
        try:
            a.commit()
        except CommitFailedError as e:
            cause = e.args[0] if e.args else None
            client(f"A finished processing and committed with generation {gen_a}: {e!r}")
            if not isinstance(cause, IllegalGenerationError):
                raise NotReproduced(f"the commit failed with {cause!r}, not ILLEGAL_GENERATION")
        else:
            raise NotReproduced("A's late commit succeeded")
        broker.show(group, expect=rf"group {re.escape(group)}: OffsetCommit .* answered ILLEGAL_GENERATION")
        result("ILLEGAL_GENERATION",
               f"A committed with generation {gen_a}; the group is in generation {gen_b}",
               "A spent longer than max.poll.interval.ms between polls, so it missed the rebalance "
               "B's join started. The join phase ended at the rebalance timeout without A; a static "
               "member that misses a rebalance stays a member, but it never learned generation "
               f"{gen_b}, and a commit carrying generation {gen_a} is refused. (A dynamic member would "
               "have been removed instead, and its commit answered UNKNOWN_MEMBER_ID.)",
               "process less per poll (lower max.poll.records) or raise max.poll.interval.ms above "
               "the worst-case batch time; on CommitFailedError, drop the batch's state and poll() "
               "again: the records will be redelivered to whoever owns the partition now.")
    finally:
        if b is not None:
            b.stop()
        a.close()


if __name__ == "__main__":
    run(recipe, __doc__.splitlines()[0])
