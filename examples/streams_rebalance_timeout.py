"""A Kafka Streams instance that stalls past its rebalance timeout is removed (KIP-1071).

With group.protocol=streams the broker assigns the tasks. When a new instance joins, an instance
that must give a task up keeps its epoch and stays in UNREVOKED_TASKS until it reports the task
gone; the new owner waits (UNRELEASED_TASKS: an active task never runs twice). An instance stuck
in that revocation (a long-running punctuation, a frozen process) past its rebalance timeout
(max.poll.interval.ms in Kafka Streams) is removed from the group: its next heartbeat is
answered UNKNOWN_MEMBER_ID, the waiting instance gets the task, and Kafka Streams rejoins the
stuck one as a new member once it wakes (its tasks lost, not committed).

The instances are played over raw StreamsGroupHeartbeat requests (examples/streams_recipe.py),
so every epoch and task on the wire is visible. To do this to real Kafka Streams instances, a
broker started with --admin-port offers ``groupbroker faults hold-revocations GROUP`` (members
that must revoke cannot complete it, so their rebalance timeout fires).
"""

import re
import time

from recipe import NotReproduced, client, result, run, say, unique
from streams_recipe import Instance, describe, streams_app

from protocol.errors import ErrorCode

REBALANCE_TIMEOUT_MS = 1000
#: a little more than group.streams.assignment.interval.ms (Kafka 4.3's default, 1 s)
ASSIGNMENT_INTERVAL_S = 1.1


def recipe(broker) -> None:
    app = unique("wordcount")
    conn, topic = streams_app(broker.bootstrap, app, 2, streams_initial_rebalance_delay_ms="0")
    try:
        a = Instance(conn, app, "A", topic, rebalance_timeout_ms=REBALANCE_TIMEOUT_MS)
        b = Instance(conn, app, "B", topic)
        say(f"A joins the application {app} (rebalance timeout {REBALANCE_TIMEOUT_MS} ms): its "
            "first heartbeat registers the topology; the broker creates the internal topics")
        a.heartbeat()
        deadline = time.monotonic() + 10
        while len(a.active) < 4 and time.monotonic() < deadline:      # its internal topics are made
            time.sleep(0.3)
            a.heartbeat(quiet=True)
        a.heartbeat()
        if len(a.active) != 4:
            raise NotReproduced(f"A never got the application's four tasks: {sorted(a.active)}")
        say("\nB joins; A is asked to give two tasks to B, and stalls in its revocation:")
        b.heartbeat()
        time.sleep(ASSIGNMENT_INTERVAL_S)
        a.held, a.stalled = (set(a.active), set(a.standby)), True
        asked = a.heartbeat()
        if asked.error_code or asked.active_tasks is None or len(a.active) == 4:
            raise NotReproduced(f"A was never asked to revoke a task: {describe(asked)}")
        waiting = b.heartbeat()
        since, answer = time.monotonic(), None
        client("A keeps processing all four tasks (stuck): it heartbeats every 300 ms and reports them")
        while time.monotonic() - since < REBALANCE_TIMEOUT_MS / 1000 + 3:
            time.sleep(0.3)
            answer = a.heartbeat(quiet=True)
            if answer.error_code:
                break
        client(f"A, {time.monotonic() - since:.1f} s after it was asked to revoke: {describe(answer)}")
        took = b.heartbeat()
        b.heartbeat()
        b.leave()
    finally:
        conn.close()
    if answer is None or answer.error_code != ErrorCode.UNKNOWN_MEMBER_ID:
        raise NotReproduced(f"A's heartbeat after its rebalance timeout was answered {describe(answer)}")
    if len(b.active) != 4:
        raise NotReproduced(f"B did not take the tasks over: {sorted(b.active)}")
    broker.show(app, "fenced|joins|bumped", expect=rf"group {re.escape(app)}: member {re.escape(a.member_id)} fenced")
    result("A STALLED STREAMS INSTANCE REMOVED",
           f"A held 4 tasks, was asked to give 2 to B, and kept them past its {REBALANCE_TIMEOUT_MS} ms rebalance "
           f"timeout: removed from the group (UNKNOWN_MEMBER_ID); B waited "
           f"({'with no tasks' if waiting.active_tasks is not None and not waiting.active_tasks else 'for them'}) "
           f"and then took all four (epoch {took.member_epoch})",
           "an active task runs on one instance at a time: the broker gives a task to its new owner only once "
           "the old one reports it gone, and removes an owner that does not within its rebalance timeout, so "
           "that a stuck instance cannot stall the application forever",
           "keep each poll's processing (and punctuations) under max.poll.interval.ms; let Kafka Streams rejoin "
           "the removed instance (it does so by itself, restoring its state from the changelogs)")


if __name__ == "__main__":
    run(recipe, __doc__.splitlines()[0])
