"""REBALANCE_IN_PROGRESS on Heartbeat: how a member learns that it must rejoin.

Consumer A (kafka-python) is alone and Stable in generation N. Consumer B joins: the
coordinator moves the group to PreparingRebalance and waits (up to the rebalance timeout, the
largest max.poll.interval.ms) for every member to rejoin. A is told through its next
Heartbeat, answered REBALANCE_IN_PROGRESS; A rejoins on its next poll() and both members
end up in generation N+1.
"""

import re

from recipe import (ClientLog, NotReproduced, Polling, client, join, make_topic, result, run, unique,
                    wait_until)

RIP_LOG = r"is rebalancing; rejoining"      # kafka-python's heartbeat thread on REBALANCE_IN_PROGRESS


def recipe(broker) -> None:
    from kafka import KafkaConsumer

    logs = ClientLog()
    topic, group = unique("events"), unique("rebalancing")
    make_topic(broker.bootstrap, topic, partitions=4)
    common = dict(bootstrap_servers=broker.bootstrap, group_id=group, enable_auto_commit=False,
                  session_timeout_ms=6000, heartbeat_interval_ms=300, max_poll_interval_ms=5000)
    a = KafkaConsumer(client_id="A", **common)
    b = None
    try:
        before = join(a, topic, "A")
        client(f"A is Stable in generation {before.generation_id} with partitions "
               f"{sorted(p.partition for p in a.assignment())}; it heartbeats every 300 ms")

        b = Polling(topic, client_id="B", **common)
        heard = wait_until(lambda: a.poll(timeout_ms=300) is not None and logs.find(RIP_LOG, "A"), 10)
        if not heard:
            raise NotReproduced("A's heartbeat was never answered REBALANCE_IN_PROGRESS")
        refused = _refused_heartbeat_generation(logs)
        client(f"B joined; A's heartbeat (generation {refused}) was answered REBALANCE_IN_PROGRESS; "
               f"A's heartbeat thread logged: {heard[0]}")
        after = wait_until(lambda: a.poll(timeout_ms=300) is not None and a.assignment()
                           and a.group_metadata().generation_id > before.generation_id
                           and a.group_metadata(), 10)
        if not after:
            raise NotReproduced("A did not rejoin into a newer generation")
        gen_b = wait_until(b.generation, 5)
        client(f"A rejoined (same member id: {after.member_id == before.member_id}) and is in generation "
               f"{after.generation_id} with partitions {sorted(p.partition for p in a.assignment())}; "
               f"B is in generation {gen_b}")
        logged = rf"Heartbeat v\d+ from member {re.escape(before.member_id)} \(generation {refused}\) " \
                 r"answered REBALANCE_IN_PROGRESS"
        broker.show(group, "Heartbeat|->", expect=logged)
        if not broker.external and not broker.log(logged):
            raise NotReproduced("the broker's log shows no such Heartbeat answered REBALANCE_IN_PROGRESS")
        result("REBALANCE_IN_PROGRESS",
               f"A's heartbeat in generation {refused} was refused; "
               f"A rejoined and the group is in generation {after.generation_id}",
               "a heartbeat is how a Stable member hears of a rebalance: a new member (B), a "
               "member leaving or timing out, or a subscription change moved the group to "
               "PreparingRebalance. It is a signal, not a failure.",
               "nothing to fix if members poll() often: they rejoin within the rebalance timeout "
               "(the largest max.poll.interval.ms). A member that does not poll in time is dropped "
               "(dynamic: UNKNOWN_MEMBER_ID) or left behind (static: ILLEGAL_GENERATION). Frequent "
               "rebalances? Use static membership (group.instance.id) for restarts, or the "
               "cooperative-sticky assignor so members keep partitions while rebalancing.")
    finally:
        if b is not None:
            b.stop()
        a.close()


def _refused_heartbeat_generation(logs: ClientLog) -> int | None:
    """The generation A's last Heartbeat carried before kafka-python logged the refusal."""
    generation = None
    for record in list(logs.records):
        if record.threadName != "kafka-io-A":
            continue
        sent = re.search(r"Sending HeartbeatRequest.*generation_id=(-?\d+)", record.getMessage())
        if sent:
            generation = int(sent.group(1))
        elif re.search(RIP_LOG, record.getMessage()):
            return generation
    return None


if __name__ == "__main__":
    run(recipe, __doc__.splitlines()[0])
