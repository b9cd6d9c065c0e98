"""What the rebalance-error recipes share, so each recipe file holds only its scenario.

* :class:`Broker`: a throwaway ``python -m broker serve --port 0`` with short group timeouts
  (its log read back, because the broker logs every group-API error it answers; with
  ``nodes``, a cluster whose faults the recipe drives: ``broker.faults.move_coordinator(...)``),
  or, with ``--bootstrap-server``, an existing broker whose log this process cannot see.
* :func:`connect`: one raw connection with our own client, for errors that clients handle
  silently (e.g. MEMBER_ID_REQUIRED).
* :class:`ClientLog`: a client's log records kept in memory, for errors the client only logs.
* :func:`settle` and :class:`Polling`: kafka-python members driven so that they do not wedge.
* :func:`run`: the command line, the broker's lifetime and the exit code. A recipe raises
  :class:`NotReproduced` when the failure it demonstrates did not happen: exit code 1.
"""

from __future__ import annotations

import argparse
import logging
import re
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kafka_client.blocking import BlockingClient  # noqa: E402
from broker.testing.launcher import TEST_DEFAULTS, BrokerProcess  # noqa: E402
from protocol import REQUESTS  # noqa: E402
from protocol.api_keys import ApiKey  # noqa: E402


class NotReproduced(Exception):
    """The failure this recipe demonstrates did not happen."""


class Broker:
    """A groupbroker subprocess for one recipe (the project's launcher), or the broker at
    ``bootstrap``."""

    def __init__(self, bootstrap: str | None = None, overrides: dict | None = None, nodes: int = 1,
                 faults: bool = False):
        self.external = bootstrap is not None
        self.bootstrap = bootstrap or ""
        self.overrides = {**TEST_DEFAULTS, **(overrides or {})}
        self.nodes = nodes
        self.with_faults = faults or nodes > 1
        self.faults = None                # fault injection, for a cluster the recipe started
        self._admin = None
        self._process: BrokerProcess | None = None
        self._tmp: tempfile.TemporaryDirectory | None = None

    def __enter__(self) -> Broker:
        if not self.external:
            self._tmp = tempfile.TemporaryDirectory(prefix="groupbroker-recipe-")
            overrides = {**self.overrides, "groupbroker.admin.port": 0} if self.with_faults else self.overrides
            self._process = BrokerProcess(Path(self._tmp.name) / "data", Path(self._tmp.name) / "broker.log",
                                          overrides, nodes=self.nodes).start()
            self.bootstrap = self._process.bootstrap
            if self.with_faults:
                from broker.cli.faults import AdminClient
                admin = self.log(r"admin endpoint listening on")[0].split()[4]
                token = (Path(self._tmp.name) / "data" / "admin.token").read_text().strip()
                self._admin = AdminClient(admin, token)
                self.faults = self._admin.faults
        elif self.nodes > 1:
            raise NotReproduced("this recipe moves a cluster's nodes: run it without --bootstrap-server")
        elif self.with_faults:
            raise NotReproduced("this recipe injects faults into its broker: run it without --bootstrap-server")
        return self

    def bootstrap_for(self, listener: str) -> str:
        """The address of this broker's listener named ``listener`` (e.g. SASL_PLAINTEXT)."""
        if self._process is None:
            raise NotReproduced("this recipe configures its broker's listeners: run it without --bootstrap-server")
        return self._process.bootstrap_for(listener)

    def node_of(self, address: str) -> int:
        """The node listening on HOST:PORT (node 0 first in the bootstrap list)."""
        return self.bootstrap.split(",").index(address)

    def __exit__(self, *exc) -> None:
        if self._admin is not None:
            self._admin.close()
        if self._process is not None:
            try:
                self._process.stop()
            except AssertionError:                 # it ignored SIGTERM: it was killed
                pass
        if self._tmp is not None:
            self._tmp.cleanup()

    def log(self, pattern: str) -> list[str]:
        """This broker's log lines matching ``pattern`` (none for an external broker)."""
        lines = self._process.log_text().splitlines() if self._process is not None else []
        return [line.split(": ", 1)[-1] for line in lines if re.search(pattern, line)]

    def show(self, group: str, pattern: str = "", expect: str | None = None) -> None:
        """Print what the broker logged about ``group`` (lines matching ``pattern``), once a line
        matching ``expect`` is there: the client may get an answer before its log line is read."""
        if self.external:
            say("(the broker's log is not visible: it was started elsewhere)")
            return
        if expect is not None:
            wait_until(lambda: self.log(expect), 5)
        for line in self.log(rf"group {re.escape(group)}: .*{pattern}"):
            print(f"  broker| {line}", flush=True)


def connect(address: str, client_id: str = "recipe") -> BlockingClient:
    """One raw connection (our own client), for errors that clients handle silently; to the
    first broker of a bootstrap list."""
    host, port = address.split(",")[0].rsplit(":", 1)
    return BlockingClient(host, int(port), client_id=client_id, timeout=10)


def coordinator(bootstrap: str, group: str) -> str:
    """HOST:PORT of the group's coordinator (FindCoordinator v3, one key)."""
    request = REQUESTS[ApiKey.FIND_COORDINATOR].cls(key=group, key_type=0)
    client = connect(bootstrap)
    try:
        answer = client.call(ApiKey.FIND_COORDINATOR, 3, request)
    finally:
        client.close()
    if answer.error_code:
        raise RuntimeError(f"FindCoordinator({group}) failed with error code {answer.error_code}")
    return f"{answer.host}:{answer.port}"


def leader(bootstrap: str, topic: str, partition: int) -> int:
    """The node leading ``topic``-``partition``, as Metadata tells it."""
    metadata = REQUESTS[ApiKey.METADATA].cls
    client = connect(bootstrap)
    try:
        answer = client.call(ApiKey.METADATA, 12, metadata(topics=(metadata.MetadataRequestTopic(name=topic),)))
    finally:
        client.close()
    return answer.topics[0].partitions[partition].leader_id


class ClientLog(logging.Handler):
    """A client's log records (kafka-python's ``kafka.*`` by default), kept for the recipe to
    search and print."""

    def __init__(self, logger: str = "kafka"):
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.logger = logging.getLogger(logger)
        self.logger.setLevel(logging.DEBUG)
        self.logger.addHandler(self)

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def find(self, pattern: str, client_id: str | None = None) -> list[str]:
        """Messages matching ``pattern``; with ``client_id``, only those logged by that client's
        network thread (kafka-python names it ``kafka-io-<client_id>``)."""
        return [f"{r.name} {r.levelname}: {r.getMessage()}" for r in list(self.records)
                if re.search(pattern, r.getMessage())
                and (client_id is None or r.threadName == f"kafka-io-{client_id}")]


def unique(name: str) -> str:
    """``name`` plus a random suffix: reruns against one broker never share a group or topic."""
    return f"{name}-{uuid.uuid4().hex[:6]}"


def make_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, partitions, 1)])
    finally:
        admin.close()


def produce(bootstrap: str, topic: str, partitions: int, messages: int) -> None:
    """``messages`` small records round-robin over the topic's partitions."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap)
    try:
        for i in range(messages):
            producer.send(topic, b"record %d" % i, partition=i % partitions)
        producer.flush(10)
    finally:
        producer.close()


class RawTransactions:
    """A transactional producer spoken with our own client, request by request, in transaction
    version 2 as a Kafka 4 Java producer speaks it (InitProducerId v5, Produce v12 adding its
    partition, EndTxn v5): for what a client library hides (its epochs, the errors it maps)."""

    def __init__(self, bootstrap: str, transactional_id: str, name: str):
        self.tid, self.name = transactional_id, name
        self.conn = connect(bootstrap, client_id=name)
        self.producer_id, self.epoch, self.sequence = -1, -1, 0

    def init(self, *, retry: bool = True) -> int:
        """InitProducerId v5 (retried while the coordinator aborts what was open); its error."""
        body = REQUESTS[ApiKey.INIT_PRODUCER_ID].cls(transactional_id=self.tid, transaction_timeout_ms=60000,
                                                     producer_id=-1, producer_epoch=-1)
        while True:
            answer = self.conn.call(ApiKey.INIT_PRODUCER_ID, 5, body)
            if answer.error_code != 51 or not retry:         # CONCURRENT_TRANSACTIONS: an abort under way
                break
            client(f"{self.name}: InitProducerId answered CONCURRENT_TRANSACTIONS (the open transaction "
                   f"is being aborted); retrying")
            time.sleep(0.1)
        if answer.error_code == 0:
            self.producer_id, self.epoch, self.sequence = answer.producer_id, answer.producer_epoch, 0
        return answer.error_code

    def send(self, topic: str, value: bytes) -> int:
        """A transactional Produce v12 of one record to partition 0; its error code."""
        from kafka.record.default_records import DefaultRecordBatchBuilder

        builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=True,
                                            producer_id=self.producer_id, producer_epoch=self.epoch,
                                            base_sequence=self.sequence, batch_size=1 << 20)
        builder.append(0, timestamp=int(time.time() * 1000), key=None, value=value, headers=[])
        produce = REQUESTS[ApiKey.PRODUCE].cls
        topic_data = produce.TopicProduceData(name=topic, partition_data=(
            produce.TopicProduceData.PartitionProduceData(index=0, records=bytes(builder.build())),))
        answer = self.conn.call(ApiKey.PRODUCE, 12, produce(transactional_id=self.tid, acks=-1, timeout_ms=10000,
                                                            topic_data=(topic_data,)))
        error = answer.responses[0].partition_responses[0].error_code
        if error == 0:
            self.sequence += 1
        return error

    def end(self, commit: bool = True, epoch: int | None = None) -> int:
        """EndTxn v5 at ``epoch`` (the current one by default); on success the producer goes on
        with the producer id and epoch it names, sequences from 0."""
        body = REQUESTS[ApiKey.END_TXN].cls(transactional_id=self.tid, producer_id=self.producer_id,
                                            producer_epoch=self.epoch if epoch is None else epoch, committed=commit)
        answer = self.conn.call(ApiKey.END_TXN, 5, body)
        if answer.error_code == 0:
            self.producer_id, self.epoch, self.sequence = answer.producer_id, answer.producer_epoch, 0
        return answer.error_code

    def close(self) -> None:
        self.conn.close()


def read_committed(bootstrap: str, topic: str, expect: int, timeout: float = 10.0) -> list[bytes]:
    """The values a read_committed reader sees in partition 0 of ``topic``."""
    from kafka import KafkaConsumer, TopicPartition

    reader = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed",
                           auto_offset_reset="earliest", enable_auto_commit=False)
    try:
        reader.assign([TopicPartition(topic, 0)])
        seen, deadline = [], time.monotonic() + timeout
        while time.monotonic() < deadline and len(seen) < expect:
            for records in reader.poll(200).values():
                seen.extend(r.value for r in records)
        return seen
    finally:
        reader.close()


def say(text: str) -> None:
    print(text, flush=True)


def client(text: str) -> None:
    print(f"  client| {text}", flush=True)


def result(error: str, details: str, why: str, fix: str) -> None:
    """The recipe's conclusion: the error reproduced, with the generations, why, and the fix."""
    say(f"\nRESULT: {error} reproduced: {details}")
    say(f"WHY: {why}")
    say(f"FIX: {fix}")


def wait_until(predicate, timeout: float, interval: float = 0.05):
    """The predicate's first truthy value within ``timeout`` s, else None."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)


def poll_until(predicate, consumers, timeout: float):
    """Poll librdkafka ``consumers`` (callbacks and logs come from poll) until ``predicate``
    gives a truthy value within ``timeout`` s; that value, else None."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        for c in consumers:
            c.poll(0.05)
    return None


def join(consumer, topic: str, name: str):
    """Subscribe ``consumer`` to ``topic`` and poll until it is Stable (see :func:`settle`);
    its group_metadata(). Raises NotReproduced if it never settles."""
    consumer.partitions_for_topic(topic)        # metadata first: spares the leader a rejoin
    consumer.subscribe([topic])
    meta = settle(consumer)
    if meta is None:
        raise NotReproduced(f"{name} never settled in a generation")
    return meta


def settle(consumer, timeout: float = 10.0, quiet: float = 0.6):
    """Poll a kafka-python consumer until it is Stable with an assignment in a generation that
    has not changed for ``quiet`` s; its group_metadata(), or None.

    A leader may rejoin once when topic metadata arrives after its first join; kafka-python
    3.0.12 never finishes such a rejoin if a poll() timeout runs out in the middle (it stays
    "rebalancing", without heartbeats), hence polls of a full second here.
    """
    from kafka.structs import MemberState

    deadline = time.monotonic() + timeout
    seen, since = None, time.monotonic()
    while time.monotonic() < deadline:
        consumer.poll(timeout_ms=1000)
        meta = consumer.group_metadata()
        stable = consumer.assignment() and meta.state == MemberState.STABLE
        current = (meta.generation_id, meta.member_id) if stable else None
        if current != seen:
            seen, since = current, time.monotonic()
        elif current is not None and time.monotonic() - since >= quiet:
            return meta
    return None


class Polling:
    """A well-behaved kafka-python member: subscribed to ``topic`` and polled every 500 ms on
    its own thread until :meth:`stop` closes it. (Polls shorter than a rejoin can wedge
    kafka-python 3.0.12, see :func:`settle`.)"""

    def __init__(self, topic: str, **config):
        from kafka import KafkaConsumer

        self.consumer = KafkaConsumer(**config)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(topic,), daemon=True)
        self._thread.start()

    def _run(self, topic: str) -> None:
        self.consumer.partitions_for_topic(topic)
        self.consumer.subscribe([topic])
        while not self._stop.is_set():
            self.consumer.poll(timeout_ms=500)
        self.consumer.close()

    def generation(self) -> int | None:
        """Its generation once it holds an assignment, else None."""
        return self.consumer.group_metadata().generation_id if self.consumer.assignment() else None

    def partitions(self) -> list[int]:
        return sorted(p.partition for p in self.consumer.assignment())

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(15)


def run(recipe, description: str, overrides: dict | None = None, nodes: int = 1, faults: bool = False) -> None:
    """Parse ``--bootstrap-server``, run ``recipe(broker)``, exit 0 if it reproduced, else 1."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--bootstrap-server", metavar="HOST:PORT",
                        help="use this broker instead of starting a groupbroker (it must allow "
                             "the recipe's short session timeouts)")
    args = parser.parse_args()
    say(description)
    try:
        with Broker(args.bootstrap_server, overrides, nodes, faults) as broker:
            origin = "external" if broker.external else "groupbroker started for this recipe"
            say(f"broker: {broker.bootstrap} ({origin})")
            recipe(broker)
    except NotReproduced as e:
        say(f"\nNOT REPRODUCED: {e}")
        sys.exit(1)
    sys.exit(0)
