"""Kafka clients in their own processes for end-to-end tests (brokers come from
broker/testing/launcher.py), and what the tests share to check what they saw.

Standard library only at import time: this file also runs as a script
(``python processes.py consume|produce ...``) under another virtualenv (kafka-python
2.0.2), where neither trio nor the broker is installed.

* :class:`ConsumerProcess` runs the ``consume`` script: one group member with manual commits
  after each batch and before the next poll, reporting every event as a JSON line.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent


def wait_until(predicate, timeout: float, what: str, interval: float = 0.05):
    """predicate() until it returns something true: that value, or AssertionError naming what
    was awaited and the last value seen."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {value!r})")
        time.sleep(interval)


def settled_generation(views, partitions: int, newer_than: int = 0):
    """The generation group members share once each owns at least one partition and together
    they own each of ``partitions`` exactly once; None until then. ``views``: one
    (assigned partitions, generation) per member."""
    generations = {g for _, g in views}
    owned = sorted(p for a, _ in views for p in a)
    if (len(generations) == 1 and next(iter(generations)) > newer_than and all(a for a, _ in views)
            and owned == list(range(partitions))):
        return views[0][1]
    return None


# --- client processes ---------------------------------------------------------------------------

class ConsumerProcess:
    """One group member in its own process (the ``consume`` script below), read as events.

    Events (dicts, each with ``t`` = time.time()): ``assigned`` (partitions, generation,
    member), ``revoked``, ``batch`` (records as [partition, offset]), ``commit`` (ok, error),
    ``closed``. SIGTERM closes the consumer (LeaveGroup); SIGKILL leaves without a word.
    """

    def __init__(self, name: str, bootstrap: str, group: str, topic: str, *,
                 python: str = sys.executable, session_ms: int = 3000, heartbeat_ms: int = 500,
                 max_poll_ms: int = 10000, max_records: int = 500, api_version: str | None = None,
                 stderr_path=None):
        self.name = name
        cmd = [python, str(Path(__file__).resolve()), "consume", "--bootstrap", bootstrap,
               "--group", group, "--topic", topic, "--client-id", name,
               "--session-ms", str(session_ms), "--heartbeat-ms", str(heartbeat_ms),
               "--max-poll-ms", str(max_poll_ms), "--max-records", str(max_records)]
        if api_version:
            cmd += ["--api-version", api_version]
        self._stderr = open(stderr_path, "ab") if stderr_path else subprocess.DEVNULL
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self._stderr,
                                     stdin=subprocess.DEVNULL)
        self.events: list[dict] = []
        self._asked = False
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            with self._lock:
                self.events.append(event)

    def snapshot(self) -> list[dict]:
        with self._lock:
            return list(self.events)

    @property
    def assignment(self) -> set[int] | None:
        """Partitions currently held: None before the first assignment or after a revocation."""
        current = None
        for e in self.snapshot():
            if e["ev"] == "assigned":
                current = set(e["partitions"])
            elif e["ev"] == "revoked":
                current = None
        return current

    @property
    def generations(self) -> list[int]:
        """The generation of every assignment it received, in order."""
        return [e["generation"] for e in self.snapshot() if e["ev"] == "assigned"]

    @property
    def generation(self) -> int | None:
        gens = self.generations
        return gens[-1] if gens else None

    @property
    def member_id(self) -> str | None:
        ids = [e["member"] for e in self.snapshot() if e["ev"] == "assigned"]
        return ids[-1] if ids else None

    def batches(self) -> list[dict]:
        """Each batch with ``committed`` True/False (commit failed) or None (never committed)."""
        out, pending = [], None
        for e in self.snapshot():
            if e["ev"] == "batch":
                pending = {"records": [tuple(r) for r in e["records"]], "t": e["t"],
                           "committed": None, "consumer": self.name}
                out.append(pending)
            elif e["ev"] == "commit" and pending is not None:
                pending["committed"] = e["ok"]
                pending["error"] = e.get("error")
                pending = None
        return out

    def ask_to_stop(self) -> None:
        """SIGTERM once (a second one could land while Python is finalizing, and kill it)."""
        if not self._asked and self.proc.poll() is None:
            self._asked = True
            self.proc.send_signal(signal.SIGTERM)

    def terminate(self, timeout: float = 15.0) -> int:
        """Stop it cleanly (close() sends LeaveGroup); its exit code."""
        self.ask_to_stop()
        code = self.proc.wait(timeout)
        self._reader.join(5)
        return code

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        self._reader.join(5)

    def close(self) -> None:
        """Cleanup for finalizers: whatever state it is in, make sure it is gone."""
        try:
            if self.proc.poll() is None:
                self.terminate(5)
        except subprocess.TimeoutExpired:
            self.kill()
        if self._stderr is not subprocess.DEVNULL:
            self._stderr.close()


def check_exactly_once(expected: set, consumers) -> dict:
    """Every record in ``expected`` was consumed in exactly one successfully committed batch;
    any other consumption of it was in a batch whose commit failed or never happened (the
    uncommitted window), and came before the committed one. Returns a summary.

    A batch whose commit was never reported (its consumer was SIGKILLed around the commit)
    counts as committed for records that nobody else committed: the kill may have fallen
    between the broker's answer and the report.
    """
    committed: dict[tuple, dict] = {}
    uncommitted: dict[tuple, list] = {}
    for consumer in consumers:
        for batch in consumer.batches():
            for rec in batch["records"]:
                if batch["committed"]:
                    assert rec not in committed, (
                        f"record {rec} consumed and committed twice: by {committed[rec]['consumer']} "
                        f"and {batch['consumer']}")
                    committed[rec] = batch
                else:
                    uncommitted.setdefault(rec, []).append(batch)
    for rec, batches in uncommitted.items():
        unknown = [b for b in batches if b["committed"] is None]
        if rec not in committed and unknown:
            committed[rec] = unknown[-1]
            batches.remove(unknown[-1])
    missing = expected - set(committed)
    assert not missing, f"{len(missing)} records never committed, e.g. {sorted(missing)[:5]}"
    extra = set(committed) - expected
    assert not extra, f"consumed records nobody produced: {sorted(extra)[:5]}"
    redelivered = 0
    for rec, batches in uncommitted.items():
        for batch in batches:
            assert batch["t"] <= committed[rec]["t"], (
                f"record {rec} consumed by {batch['consumer']} after {committed[rec]['consumer']} "
                f"had committed it")
            redelivered += 1
    return {"committed": len(committed), "redelivered": redelivered}


def committed_records(consumers) -> set:
    return {rec for c in consumers for b in c.batches() if b["committed"] for rec in b["records"]}


# --- the client scripts (run with any kafka-python, 2.0.2 or 3.0.12) ---------------------------

def _emit(**event) -> None:
    event["t"] = time.time()
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def _api_version(text):
    return tuple(int(x) for x in text.split(".")) if text else None


def _consume(args) -> int:
    from kafka import KafkaConsumer, ConsumerRebalanceListener
    from kafka.errors import CommitFailedError, KafkaError

    if os.environ.get("E2E_CLIENT_LOG"):
        import logging
        logging.basicConfig(level=getattr(logging, os.environ["E2E_CLIENT_LOG"]), stream=sys.stderr,
                            format="%(asctime)s %(levelname)s %(name)s %(threadName)s: %(message)s")
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    kw = dict(bootstrap_servers=args.bootstrap, group_id=args.group, client_id=args.client_id,
              enable_auto_commit=False, auto_offset_reset="earliest",
              session_timeout_ms=args.session_ms, heartbeat_interval_ms=args.heartbeat_ms,
              max_poll_interval_ms=args.max_poll_ms, max_poll_records=args.max_records,
              request_timeout_ms=max(30000, args.session_ms + 5000))
    if args.api_version:
        kw["api_version"] = _api_version(args.api_version)
    consumer = KafkaConsumer(**kw)

    def generation():
        gen = getattr(consumer._coordinator, "_generation", None)
        return (getattr(gen, "generation_id", None), getattr(gen, "member_id", None))

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            _emit(ev="revoked", partitions=sorted(tp.partition for tp in revoked))

        def on_partitions_assigned(self, assigned):
            gen, member = generation()
            _emit(ev="assigned", partitions=sorted(tp.partition for tp in assigned),
                  generation=gen, member=member)

    # kafka-python 3.0.12 wedges a leader whose rejoin was caused only by new topic metadata
    # when poll()'s timeout runs out during that join (the join's completion is then skipped:
    # no assignment, heartbeats stay off). Knowing the topic before the first join avoids that
    # rejoin, and a longer poll timeout makes the race rarer.
    consumer.partitions_for_topic(args.topic)
    consumer.subscribe([args.topic], listener=Listener())
    while not stopping:
        batch = consumer.poll(timeout_ms=500)
        records = [[tp.partition, r.offset] for tp, rs in batch.items() for r in rs]
        if not records:
            continue
        _emit(ev="batch", records=records)
        try:
            consumer.commit()
            _emit(ev="commit", ok=True)
        except CommitFailedError as e:
            _emit(ev="commit", ok=False, error=repr(e))
        except KafkaError as e:                       # e.g. RebalanceInProgressError (3.x)
            _emit(ev="commit", ok=False, error=repr(e))
    consumer.close()
    _emit(ev="closed")
    return 0


def _produce(args) -> int:
    """Produce ``count`` messages (values from m<start>) round-robin over ``partitions``; print
    each [partition, offset]."""
    from kafka import KafkaProducer

    kw = dict(bootstrap_servers=args.bootstrap, acks="all", linger_ms=5)
    if args.api_version:
        kw["api_version"] = _api_version(args.api_version)
    producer = KafkaProducer(**kw)
    futures = [producer.send(args.topic, value=b"m%d" % i, key=b"k%d" % i,
                             partition=i % args.partitions)
               for i in range(args.start, args.start + args.count)]
    producer.flush(30)
    records = [[m.partition, m.offset] for m in (f.get(30) for f in futures)]
    producer.close()
    _emit(ev="produced", records=records)
    return 0


def _committed(args) -> int:
    """Print the group's committed offset of every partition of the topic (OffsetFetch)."""
    from kafka import KafkaConsumer, TopicPartition

    kw = dict(bootstrap_servers=args.bootstrap, group_id=args.group, enable_auto_commit=False)
    if args.api_version:
        kw["api_version"] = _api_version(args.api_version)
    consumer = KafkaConsumer(**kw)
    parts = sorted(consumer.partitions_for_topic(args.topic) or ())
    offsets = {p: consumer.committed(TopicPartition(args.topic, p)) for p in parts}
    consumer.close()
    _emit(ev="committed", offsets=offsets)
    return 0


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=("consume", "produce", "committed"))
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--group")
    parser.add_argument("--client-id", default="e2e")
    parser.add_argument("--session-ms", type=int, default=3000)
    parser.add_argument("--heartbeat-ms", type=int, default=500)
    parser.add_argument("--max-poll-ms", type=int, default=10000)
    parser.add_argument("--max-records", type=int, default=500)
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--partitions", type=int, default=1)
    parser.add_argument("--api-version")
    args = parser.parse_args(argv)
    return {"consume": _consume, "produce": _produce, "committed": _committed}[args.mode](args)


if __name__ == "__main__":
    sys.exit(main())


# --- helpers for in-process clients (confluent-kafka, aiokafka) --------------------------------

def in_ci() -> bool:
    """Whether this is CI (``CI`` set and not false/0/no), where a missing client fails."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def missing(reason: str):
    """A client the test needs is not there: fail in CI, skip elsewhere (never returns)."""
    import pytest
    if in_ci():
        pytest.fail(f"CI is set but {reason}", pytrace=False)
    pytest.skip(reason)


def import_client(name: str):
    """Import a Kafka client library for a test: in CI a missing library fails the test;
    elsewhere the test is skipped."""
    import importlib
    try:
        return importlib.import_module(name)
    except ImportError as e:
        missing(f"the client library {name!r} is missing: {e}")


def require_tool(name: str, install: str) -> str:
    """The path of the program ``name`` on PATH for a test; in CI a missing one fails the test,
    elsewhere it is skipped. ``install`` says how to get it (.ci/setup/clients.sh does)."""
    import shutil
    path = shutil.which(name)
    if path is None:
        missing(f"the program {name!r} is not on PATH (install: {install})")
    return path


class BatchRecorder:
    """What one in-process consumer read and committed, in the shape :func:`check_exactly_once`
    and :func:`committed_records` expect (``name`` and ``batches()``)."""

    def __init__(self, name: str):
        self.name = name
        self._batches: list[dict] = []

    def batch(self, records) -> dict:
        """A consumed batch of (partition, offset); mark it with :meth:`committed` afterwards."""
        entry = {"records": [tuple(r) for r in records], "t": time.time(), "committed": None,
                 "consumer": self.name, "error": None}
        self._batches.append(entry)
        return entry

    @staticmethod
    def committed(entry: dict, ok: bool, error=None) -> None:
        entry["committed"], entry["error"] = ok, None if error is None else str(error)

    def batches(self) -> list[dict]:
        return list(self._batches)

    def partitions(self) -> set[int]:
        return {p for b in self._batches for p, _ in b["records"]}

    def failed_commits(self) -> list[str]:
        return [b["error"] for b in self._batches if b["committed"] is False]


STATE_CHANGE = re.compile(r"group (?P<group>\S+): (?P<before>\w+) -> (?P<after>\w+) "
                          r"\(generation (?P<generation>\d+), members \[(?P<members>[^\]]*)\]\): (?P<reason>.*)$")


def state_changes(text: str, group: str) -> list[dict]:
    """The broker's state-change log lines for ``group`` (``group G: A -> B (generation N,
    members [...]): reason``), oldest first, as dicts (generation an int, members a list)."""
    out = []
    for line in text.splitlines():
        found = STATE_CHANGE.search(line)
        if found and found["group"] == group:
            change = found.groupdict()
            change["generation"] = int(change["generation"])
            change["members"] = re.findall(r"'([^']*)'", change["members"])
            out.append(change)
    return out
