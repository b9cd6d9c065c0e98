"""Scaling a Kafka Streams application out from one instance to three, with a standby (KIP-1071).

With group.protocol=streams the broker's sticky task assignor places the tasks: every active task
on one instance, and for a stateful task (here the counting subtopology, 1_x) as many standby
replicas as the group's streams.num.standby.replicas, each on another instance than its active
task, so that a failover restores little. Scaling out moves only what the new instances take:
an instance first gives up the tasks it must revoke (its epoch unchanged), and their new owner
gets each task once it is released. The recipe prints each instance's tasks at each step and
how many moved.

The instances are played over raw StreamsGroupHeartbeat requests (examples/streams_recipe.py).
With real Kafka Streams instances, `groupbroker groups --describe --group APP --members` shows
the same.
"""

import time

from recipe import NotReproduced, result, run, say, unique
from streams_recipe import Instance, streams_app


def settle(instances, rounds: int = 8) -> None:
    """Heartbeat until no instance's tasks change (revocations done, released tasks taken)."""
    for _ in range(rounds):
        before = [(i.epoch, set(i.active), set(i.standby)) for i in instances]
        for i in instances:
            i.heartbeat(quiet=True)
        if before == [(i.epoch, set(i.active), set(i.standby)) for i in instances]:
            return
        time.sleep(0.3)


def show(step: str, instances) -> dict:
    placement = {i.name: (sorted(f"{s}_{p}" for s, p in i.active), sorted(f"{s}_{p}" for s, p in i.standby))
                 for i in instances}
    say(f"\n{step}:")
    for name, (active, standby) in placement.items():
        say(f"  {name}: active {active}, standby {standby}")
    return placement


def recipe(broker) -> None:
    app = unique("wordcount")
    conn, topic = streams_app(broker.bootstrap, app, 3, streams_initial_rebalance_delay_ms="0",
                              streams_num_standby_replicas="1", streams_assignment_interval_ms="0")
    try:
        a = Instance(conn, app, "A", topic)
        a.heartbeat()
        deadline = time.monotonic() + 10
        while len(a.active) < 6 and time.monotonic() < deadline:      # its internal topics are made
            time.sleep(0.3)
            a.heartbeat(quiet=True)
        one = show("one instance: every task active on A, no standby (a task's standby never shares its instance)", [a])
        b, c = Instance(conn, app, "B", topic), Instance(conn, app, "C", topic)
        for i in (b, c):
            i.heartbeat()
        settle([a, b, c])
        three = show("three instances", [a, b, c])
        for i in (a, b, c):
            i.leave()
    finally:
        conn.close()
    actives = [t for active, _ in three.values() for t in active]
    standbys = [t for _, standby in three.values() for t in standby]
    stayed = [t for t in one["A"][0] if t in three["A"][0]]
    if len(one["A"][0]) != 6 or sorted(actives) != sorted(one["A"][0]) or len(standbys) != 3:
        raise NotReproduced(f"the tasks were not spread: {one} then {three}")
    if any(set(active) & set(standby) for active, standby in three.values()):
        raise NotReproduced(f"an instance holds a task twice: {three}")
    result("TASKS SPREAD WITH STANDBYS",
           f"A kept {len(stayed)} of its 6 tasks ({stayed}); B and C took the other {6 - len(stayed)}; "
           f"each counting task 1_x has its standby on another instance ({len(standbys)} standbys)",
           "the sticky task assignor keeps tasks where they ran, balances the rest by process load, and "
           "puts a stateful task's standbys on processes that do not run it; an instance gives up what it must "
           "revoke before its new owner starts it",
           "size num.standby.replicas (the group config streams.num.standby.replicas with this protocol) to "
           "the failovers you must survive without a long restore; add instances one at a time to move least")


if __name__ == "__main__":
    run(recipe, __doc__.splitlines()[0])
