"""UNKNOWN_MEMBER_ID after session expiry: a member frozen longer than session.timeout.ms.

Consumer A runs in its own process (kafka-python, session.timeout.ms=1500) next to consumer B.
The recipe freezes A's whole process with SIGSTOP for 2.5 s or more -- what a long GC pause, a
suspended VM or a debugger breakpoint does: no thread runs, so no heartbeat is sent. The
coordinator expires A's session, removes it and gives its partitions to B. When A resumes,
its next Heartbeat carries a member id the group no longer knows: UNKNOWN_MEMBER_ID. A then
forgets its id and joins again as a new member, in a new generation.
"""

import json
import logging
import re
import signal
import subprocess
import sys
import threading
import time

from recipe import NotReproduced, Polling, client, make_topic, result, run, settle, unique, wait_until

SESSION_MS, FREEZE_S = 1500, 2.5
INTERESTING = (r"error_code=[1-9]|not recognized|session expired|Marking the coordinator dead"
               r"|Successfully joined")


def recipe(broker) -> None:
    topic, group = unique("payments"), unique("frozen")
    make_topic(broker.bootstrap, topic, partitions=2)
    a = Member(broker.bootstrap, group, topic)
    b = None
    try:
        b = Polling(topic, client_id="B", bootstrap_servers=broker.bootstrap, group_id=group,
                    enable_auto_commit=False, session_timeout_ms=6000, heartbeat_interval_ms=300,
                    max_poll_interval_ms=5000)
        both = _shared_generation(a, b)
        if not both:
            raise NotReproduced("A and B never shared a generation")
        client(f"A (member {both['member']}) and B share generation {both['generation']}, "
               f"one partition each; A heartbeats every 300 ms, session.timeout.ms={SESSION_MS}")

        a.proc.send_signal(signal.SIGSTOP)
        frozen_at = time.monotonic()
        client("A's process is frozen (SIGSTOP)")
        time.sleep(FREEZE_S)
        gen_b = wait_until(lambda: (b.generation() or 0) > both["generation"] and b.generation(), 10)
        if not gen_b:
            raise NotReproduced("B never formed a generation without A")
        client(f"meanwhile B moved to generation {gen_b} and holds partitions {b.partitions()}")
        resumed_at = len(a.events)
        a.proc.send_signal(signal.SIGCONT)
        frozen = time.monotonic() - frozen_at
        client(f"A resumed (SIGCONT) after {frozen:.1f} s")

        refused = a.wait(lambda e: e["ev"] == "log" and "error_code=25" in e["msg"], 10)
        rejoined = a.wait(lambda e: e["ev"] == "stable" and e["member"] != both["member"], 10)
        for event in a.events[resumed_at:]:
            if event["ev"] == "log":
                client(f"A logged: {event['msg'][:160]}")
        if not refused:
            raise NotReproduced("A's requests were never answered UNKNOWN_MEMBER_ID (error code 25)")
        if not rejoined:
            raise NotReproduced("A never rejoined with a new member id")
        client(f"A rejoined as a new member {rejoined['member']} in generation {rejoined['generation']}")
        broker.show(group, "removed|UNKNOWN_MEMBER_ID|->",
                    expect=rf"group {re.escape(group)}: .* answered UNKNOWN_MEMBER_ID")
        result("UNKNOWN_MEMBER_ID",
               f"A's member id from generation {both['generation']} was unknown after its session "
               f"expired; B alone formed generation {gen_b}; A came back as a new member in generation "
               f"{rejoined['generation']}",
               f"A sent no heartbeat for {frozen:.1f} s > session.timeout.ms ({SESSION_MS} ms), so "
               "the coordinator removed it and rebalanced its partitions to B. Requests carrying the "
               "removed member id (Heartbeat, OffsetCommit, SyncGroup) get UNKNOWN_MEMBER_ID; a "
               "commit of work done before the freeze fails with CommitFailedError.",
               "give session.timeout.ms headroom over the longest pause the process can suffer (GC, "
               "swapping, VM migration); heartbeats run on a background thread, so slow processing "
               "alone does not expire a session (that is max.poll.interval.ms). For planned restarts "
               "use static membership (group.instance.id) with a session timeout longer than the "
               "restart, so the member keeps its identity and partitions.")
    finally:
        a.close()
        if b is not None:
            b.stop()


def _shared_generation(a, b, timeout: float = 15, quiet: float = 0.6) -> dict | None:
    """A's latest stable event once A and B have held one partition each in the same generation
    for ``quiet`` s (a leader may still rejoin once right after its first join)."""
    deadline = time.monotonic() + timeout
    seen, since = None, time.monotonic()
    while time.monotonic() < deadline:
        stable = [e for e in list(a.events) if e["ev"] == "stable"]
        current = stable[-1] if stable else None
        if not (current and current["generation"] == b.generation() and len(current["partitions"]) == 1):
            current = None
        if current != seen:
            seen, since = current, time.monotonic()
        elif current is not None and time.monotonic() - since >= quiet:
            return current
        time.sleep(0.05)
    return None


class Member:
    """Consumer A in a child process (this script with ``--member``), read as JSON events."""

    def __init__(self, bootstrap: str, group: str, topic: str):
        self.proc = subprocess.Popen([sys.executable, __file__, "--member", bootstrap, group, topic],
                                     stdout=subprocess.PIPE, text=True)
        self.events: list[dict] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.events.append(json.loads(line))

    def wait(self, predicate, timeout: float):
        return wait_until(lambda: next((e for e in list(self.events) if predicate(e)), None), timeout)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


def member(bootstrap: str, group: str, topic: str) -> int:
    """The child: consumer A, printing each new stable generation and each notable client log."""
    from kafka import KafkaConsumer
    from kafka.structs import MemberState

    def emit(**event) -> None:
        sys.stdout.write(json.dumps(event) + "\n")
        sys.stdout.flush()

    class Forward(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            message = record.getMessage()
            if re.search(INTERESTING, message):
                emit(ev="log", msg=f"{record.levelname} {message}")

    logging.getLogger("kafka.coordinator").addHandler(Forward(logging.DEBUG))
    logging.getLogger("kafka.coordinator").setLevel(logging.DEBUG)
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    a = KafkaConsumer(client_id="A", bootstrap_servers=bootstrap, group_id=group,
                      enable_auto_commit=False, session_timeout_ms=SESSION_MS,
                      heartbeat_interval_ms=300, max_poll_interval_ms=30000)
    a.partitions_for_topic(topic)
    a.subscribe([topic])
    settle(a)
    last = None
    while not stopping.is_set():
        a.poll(timeout_ms=200)
        meta = a.group_metadata()
        current = (meta.generation_id, meta.member_id)
        if meta.state == MemberState.STABLE and a.assignment() and current != last:
            last = current
            emit(ev="stable", generation=meta.generation_id, member=meta.member_id,
                 partitions=sorted(p.partition for p in a.assignment()))
    a.close()
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--member"]:
        sys.exit(member(*sys.argv[2:5]))
    run(recipe, __doc__.splitlines()[0])
