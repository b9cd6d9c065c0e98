"""Issue "What real applications hit first": stream-processing frameworks run their ordinary
examples against ``groupbroker serve``, and go on after the broker restarts.

Each framework's app is a small module in tests/interop/frameworks/, written as the framework's own
examples write one, and runs in its own process:

* Faust (faust-streaming, on aiokafka): an agent counts words into a Table backed by a
  changelog topic that Faust creates with ``cleanup.policy=compact``;
* FastStream (on aiokafka): a KafkaBroker subscriber in a consumer group whose return value
  is published to an output topic;
* Quix Streams (on confluent-kafka): a StreamingDataFrame keeps a running count per key in
  its state (RocksDB plus a compacted changelog topic).

The test produces the input with kafka-python, reads the app's output topic from the start,
and demands exact results: every count sequence 1, 2, ..., n per word with nothing repeated
or missing. Before a broker restart it waits for the app's group to have committed what it
consumed, so exactness is a fair demand of an at-least-once app; then the broker restarts on
the same data dir and port, more input comes, and the results must still be exact. The
stateful apps are also restarted with no local state, so their counts can only continue from
the changelog topic.

Quix Streams 3.x requires confluent-kafka<2.13, which conflicts with the project's
confluent-kafka==2.16.0; its app therefore runs in a virtualenv of its own (``.venv-quix``,
pinned by tests/interop/frameworks/quix-requirements.txt), built on first use like ``.venv-kp2``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

from tests.support.processes import REPO, import_client, wait_until
from tests.support.side_venv import side_python

APPS = Path(__file__).resolve().parent / "frameworks"
QUIX_VENV = Path(os.environ.get("GROUPBROKER_QUIX_VENV", REPO / ".venv-quix"))
QUIX_PINS = APPS / "quix-requirements.txt"
PARTITIONS = 2
WORDS = ["apple", "banana", "cherry", "damson", "elder"]


@pytest.fixture
def broker(start_broker):
    return start_broker({"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 1000})


class AppExited(AssertionError):
    """The app's process ended on its own (a framework gives up on a broker it cannot use)."""


class AppProcess:
    """A framework app in its own process, stdout and stderr to ``log_path``; SIGTERM asks
    it to stop the framework's way (each one handles the signal itself)."""

    def __init__(self, cmd: list[str], log_path: Path, env: dict | None = None):
        self.log_path = Path(log_path)
        with open(self.log_path, "ab") as log:
            log.write(f"=== {' '.join(cmd)}\n".encode())
            log.flush()
            self.proc = subprocess.Popen(cmd, cwd=APPS, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL,
                                         env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})

    def until(self, predicate, timeout: float, what: str, interval: float = 0.1):
        """``predicate()`` once truthy, while the app keeps running (else :class:`AppExited`);
        on a timeout the error carries the app's log."""
        def check():
            if self.proc.poll() is not None:
                raise AppExited(f"the app exited with {self.proc.returncode} while waiting for "
                                f"{what}; its log:\n{self.log_tail()}")
            return predicate()
        try:
            return wait_until(check, timeout, what, interval)
        except AppExited:
            raise
        except AssertionError as e:
            raise AssertionError(f"{e}; the app's log:\n{self.log_tail()}") from None

    def stop(self, timeout: float = 20.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
            raise AssertionError(f"the app ignored SIGTERM for {timeout}s; its log:\n{self.log_tail()}")

    def wait_for_log(self, pattern: str, timeout: float = 30.0) -> None:
        self.until(lambda: re.search(pattern, self.log_path.read_text(errors="replace"), re.MULTILINE),
                   timeout, f"{pattern!r} in the app's log")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)

    def log_tail(self, chars: int = 6000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:]


@pytest.fixture
def apps():
    """Start app processes; whatever is left running at the end is killed."""
    started: list[AppProcess] = []

    def start(cmd, log_path, env=None) -> AppProcess:
        app = AppProcess(cmd, log_path, env)
        started.append(app)
        return app

    yield start
    for app in started:
        app.kill()


# --- the test's own Kafka client work (kafka-python) ----------------------------------------

def create_topics(bootstrap: str, *names: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(n, PARTITIONS, 1) for n in names])
    finally:
        admin.close()


def produce(bootstrap: str, topic: str, records) -> None:
    """``records``: (key, value) bytes, sent in order (a key always lands in one partition)."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    try:
        for key, value in records:
            producer.send(topic, key=key, value=value)
        producer.flush(30)
    finally:
        producer.close()


def read_topic(bootstrap: str, topic: str) -> list[tuple[bytes, bytes]]:
    """Everything in ``topic`` now, partition by partition, each in offset order."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                             consumer_timeout_ms=2000)
    try:
        parts = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
        if not parts:
            return []
        consumer.assign(parts)
        consumer.seek_to_beginning(*parts)
        ends = consumer.end_offsets(parts)
        out: dict[int, list] = defaultdict(list)
        deadline = time.monotonic() + 15
        while any(consumer.position(tp) < ends[tp] for tp in parts):
            assert time.monotonic() < deadline, f"could not read {topic} to its end"
            for tp, messages in consumer.poll(timeout_ms=200).items():
                out[tp.partition] += [(m.key, m.value) for m in messages]
        return [kv for p in sorted(out) for kv in out[p]]
    finally:
        consumer.close()


def committed_all(bootstrap: str, group: str, topic: str) -> bool:
    """Whether ``group`` has committed the log end of every partition of ``topic``."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    try:
        parts = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
        ends = consumer.end_offsets(parts)
        return all((consumer.committed(tp) or 0) >= ends[tp] for tp in parts)
    finally:
        consumer.close()


def word_batch(start: int, count: int) -> list[str]:
    return [WORDS[(i * 7 + i // 3) % len(WORDS)] for i in range(start, start + count)]


def expected_counts(words: list[str]) -> dict[str, list[int]]:
    """Each word's count sequence as a counting app publishes it: 1, 2, ..., n."""
    seen: dict[str, list[int]] = defaultdict(list)
    for w in words:
        seen[w].append(len(seen[w]) + 1)
    return dict(seen)


def wait_for_records(bootstrap: str, topic: str, count: int, app: AppProcess,
                     timeout: float = 30.0) -> list[tuple[bytes, bytes]]:
    """The output topic once it holds ``count`` records, read a second later (a repeat would
    land right after the expected ones)."""
    app.until(lambda: len(read_topic(bootstrap, topic)) >= count, timeout,
              f"{count} records in {topic}", interval=0.3)
    time.sleep(1)
    return read_topic(bootstrap, topic)


def check_counts(bootstrap: str, topic: str, decode, words: list[str], app: AppProcess) -> None:
    """One count per input word, and each word's counts exactly 1..n in order (no repeat
    after a restart, no gap, no reset to 1)."""
    got: dict[str, list[int]] = defaultdict(list)
    for key, value in wait_for_records(bootstrap, topic, len(words), app):
        word, count = decode(key, value)
        got[word].append(count)
    wanted = expected_counts(words)
    wrong = {w: got.get(w) for w in set(got) | set(wanted) if got.get(w) != wanted.get(w)}
    assert not wrong, (f"counts per word differ from 1..n: {wrong}; wanted {wanted}; "
                       f"app log:\n{app.log_tail()}")


def wait_committed(bootstrap: str, group: str, topic: str, app: AppProcess) -> None:
    app.until(lambda: committed_all(bootstrap, group, topic), 20,
              f"group {group} to commit all of {topic}", interval=0.3)


# --- Faust -------------------------------------------------------------------------------------

def start_faust(apps, bootstrap: str, tmp_path: Path, run: int) -> AppProcess:
    """A worker, once it is ready: Faust resumes its stream partitions before it seeks them
    to the committed offsets at the end of a table recovery, so records arriving during a
    recovery may be counted twice (at-least-once); an ordinary app starts before its input."""
    env = {"FAUST_BOOTSTRAP": bootstrap, "FAUST_DATADIR": str(tmp_path / f"faust-{run}")}
    app = apps([sys.executable, "faust_wordcount.py", "worker", "-l", "info"],
               tmp_path / f"faust-{run}.log", env)
    app.wait_for_log(r"\[\^Worker\]: Ready", 45)
    return app


def faust_words(words: list[str]) -> list[tuple[bytes, bytes]]:
    """Keyed by the word (the table's key), the value in Faust's default codec (JSON)."""
    return [(w.encode(), json.dumps(w).encode()) for w in words]


def faust_count(key: bytes, value: bytes) -> tuple[str, int]:
    return key.decode(), json.loads(value)


def test_faust_word_count_table_survives_broker_restart(broker, apps, tmp_path):
    """A Faust agent counting words into a Table: exact counts, then exact again after the
    broker restarts under it, then after the broker restarts with the worker stopped and a
    fresh worker (in-memory store) rebuilds the table from its changelog topic."""
    import_client("faust")
    bootstrap = broker.bootstrap
    create_topics(bootstrap, "words")
    words = word_batch(0, 40)
    app = start_faust(apps, bootstrap, tmp_path, 1)
    produce(bootstrap, "words", faust_words(words))
    check_counts(bootstrap, "word-counts", faust_count, words, app)
    wait_committed(bootstrap, "wordcount", "words", app)

    broker.restart()                                 # the worker stays up through it
    more = word_batch(40, 40)
    produce(bootstrap, "words", faust_words(more))
    words += more
    check_counts(bootstrap, "word-counts", faust_count, words, app)
    wait_committed(bootstrap, "wordcount", "words", app)

    assert app.stop() == 0
    broker.restart()
    app = start_faust(apps, bootstrap, tmp_path, 2)  # nothing on disk: the changelog is all
    more = word_batch(80, 40)
    produce(bootstrap, "words", faust_words(more))
    words += more
    check_counts(bootstrap, "word-counts", faust_count, words, app)
    assert app.stop() == 0


def topic_config(bootstrap: str, topic: str) -> dict[str, str]:
    """The topic's configs as DescribeConfigs answers them (defaults included)."""
    from kafka.admin import ConfigResource, ConfigResourceType
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)],
                                           config_filter="all")
        return {key: entry["value"] for key, entry in described["topic"][topic].items()}
    finally:
        admin.close()


def test_faust_table_changelog_is_compacted(broker, apps, tmp_path):
    """Faust creates its table's changelog topic with cleanup.policy=compact (CreateTopics
    configs), and the broker reports it back."""
    import_client("faust")
    create_topics(broker.bootstrap, "words")
    app = start_faust(apps, broker.bootstrap, tmp_path, 1)
    assert topic_config(broker.bootstrap, "wordcount-counts-changelog")["cleanup.policy"] == "compact"
    assert app.stop() == 0


# --- FastStream --------------------------------------------------------------------------------

def start_faststream(apps, bootstrap: str, tmp_path: Path, run: int) -> AppProcess:
    app = apps([sys.executable, "faststream_shout.py", bootstrap], tmp_path / f"faststream-{run}.log")
    app.wait_for_log(r"assigned to partitions", 30)
    return app


def check_shouted(bootstrap: str, orders: list[bytes], app: AppProcess) -> None:
    """Each order shouted once, whatever the interleaving of the partitions."""
    got = [value for _, value in wait_for_records(bootstrap, "shouted", len(orders), app)]
    assert sorted(got) == sorted(o.upper() for o in orders), f"app log:\n{app.log_tail()}"


def test_faststream_subscriber_survives_broker_restart(broker, apps, tmp_path):
    """A FastStream subscriber in a consumer group publishing each handled message: every
    order shouted exactly once, through a broker restart under the running service and
    through a restart of both, where the group's committed offsets say where to resume."""
    import_client("faststream.kafka")
    bootstrap = broker.bootstrap
    create_topics(bootstrap, "orders", "shouted")

    def orders(start: int, count: int) -> list[bytes]:
        return [b"order-%d" % i for i in range(start, start + count)]

    def send(batch: list[bytes]) -> None:
        produce(bootstrap, "orders", [(b"customer-%d" % (i % 7), o) for i, o in enumerate(batch)])

    app = start_faststream(apps, bootstrap, tmp_path, 1)
    sent = orders(0, 50)
    send(sent)
    check_shouted(bootstrap, sent, app)
    wait_committed(bootstrap, "shouter", "orders", app)

    broker.restart()
    more = orders(50, 50)
    send(more)
    sent += more
    check_shouted(bootstrap, sent, app)
    wait_committed(bootstrap, "shouter", "orders", app)

    assert app.stop() == 0
    broker.restart()
    app = start_faststream(apps, bootstrap, tmp_path, 2)
    more = orders(100, 50)
    send(more)
    sent += more
    check_shouted(bootstrap, sent, app)
    assert app.stop() == 0


# --- Quix Streams ------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def quix_python() -> str:
    pins = [line for line in QUIX_PINS.read_text().splitlines() if line and not line.startswith("#")]
    return side_python(QUIX_VENV, pins, "import quixstreams, rocksdict")


def start_quix(apps, python: str, bootstrap: str, tmp_path: Path, run: int,
               recovering: bool = False) -> AppProcess:
    """An application on a state dir of its own (``run``): a new one holds nothing, so the
    counts can only go on from the changelog topic. Ready once its partitions are assigned
    and, when the changelog has something to restore, the recovery is over."""
    app = apps([python, "quix_counter.py", bootstrap, str(tmp_path / f"quix-state-{run}")],
               tmp_path / f"quix-{run}.log")
    app.wait_for_log(r"Rebalancing: assigning partitions", 45)
    if recovering:
        app.wait_for_log(r"Recovery process complete", 30)
    return app


def keyed_words(words: list[str]) -> list[tuple[bytes, bytes]]:
    return [(w.encode(), w.encode()) for w in words]


def quix_count(key: bytes, value: bytes) -> tuple[str, int]:
    count = json.loads(value)
    assert count["word"] == key.decode()
    return count["word"], count["count"]


def test_quix_running_count_survives_broker_restart(broker, apps, quix_python, tmp_path):
    """A Quix Streams running count per key (stateful apply): exact counts, then exact again
    after the broker restarts under it, then after the broker restarts with the application
    stopped and a new one on an empty state dir recovers the counts from the changelog."""
    bootstrap = broker.bootstrap
    create_topics(bootstrap, "quix-words")
    words = word_batch(0, 40)
    app = start_quix(apps, quix_python, bootstrap, tmp_path, 1)
    produce(bootstrap, "quix-words", keyed_words(words))
    check_counts(bootstrap, "quix-counts", quix_count, words, app)
    wait_committed(bootstrap, "counter", "quix-words", app)

    broker.restart()
    more = word_batch(40, 40)
    produce(bootstrap, "quix-words", keyed_words(more))
    words += more
    check_counts(bootstrap, "quix-counts", quix_count, words, app)
    wait_committed(bootstrap, "counter", "quix-words", app)

    assert app.stop() == 0
    broker.restart()
    app = start_quix(apps, quix_python, bootstrap, tmp_path, 2, recovering=True)
    more = word_batch(80, 40)
    produce(bootstrap, "quix-words", keyed_words(more))
    words += more
    check_counts(bootstrap, "quix-counts", quix_count, words, app)
    assert app.stop() == 0
