"""Coordinator failover: the time from a coordinator move until every member of a 5-member group
holds its assignment with the new coordinator, on our 3-node cluster and on librdkafka's 3-broker
mock cluster, for confluent-kafka members (and kafka-python members on ours: kafka-python 3.0.12
cannot talk to the mock), in one run.

    python bench/failover.py [--rounds N] [--members M]

Ours runs as ``groupbroker serve --nodes 3`` (a process of its own) and moves the group with the
``move-coordinator`` fault (the old node answers NOT_COORDINATOR, the new one replays the shard's
log); the mock moves it with rd_kafka_mock_coordinator_set, its old broker answering the group's
requests NOT_COORDINATOR (its groups are shared by its brokers, so there is nothing to replay);
the mock with coordinator_set alone, whose old broker goes on serving the group, is shown too. Members run in threads of this process: each polls and commits its
assigned partitions every 50 ms, and counts as settled once a commit succeeds after the move
(the new coordinator accepted its member id and generation) while it holds an assignment. The
figure of a round is when the last member settles; the table gives the median and the worst of
N rounds, and our median over the mock's. The goal: at or below the mock.

One table per fetch wait of the members. librdkafka sends its FindCoordinator on a connection
that may hold a long-poll Fetch; ours, like Kafka (whose socket server reads a connection's next
request only once the one before is answered), answers it after the Fetch, up to
fetch.wait.max.ms (500 ms by default) later; the mock answers at once. A short fetch wait shows
the failover without that wait.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from e2e import REPO, MockCluster, table  # noqa: E402

from kafka_client.blocking import BlockingClient  # noqa: E402
from broker.testing.launcher import TEST_DEFAULTS, BrokerProcess  # noqa: E402
from protocol import REQUESTS  # noqa: E402
from protocol.api_keys import ApiKey  # noqa: E402

TOPIC, PARTITIONS = "failover-bench", 10
COMMIT_EVERY_S = 0.05
NOT_COORDINATOR = 16
MOCK_REFUSALS = 200          # per API on the old mock coordinator: more than the members send


class Member(threading.Thread):
    """One group member: polls, commits its partitions' offset 0 every 50 ms, and notes the
    first successful commit after ``moved_at``."""

    def __init__(self, client: str, bootstrap: str, group: str, index: int, fetch_wait_ms: int):
        super().__init__(daemon=True)
        self.client, self.bootstrap, self.group, self.index = client, bootstrap, group, index
        self.fetch_wait_ms = fetch_wait_ms
        self.assigned = False
        self.committed_at = 0.0          # the last successful commit
        self.moved_at = float("inf")
        self.settled_at: float | None = None
        self.stop = threading.Event()

    def run(self) -> None:
        (self._run_kafka_python if self.client == "kafka-python" else self._run_confluent)()

    def _note(self, ok: bool) -> None:
        now = time.perf_counter()
        if ok:
            self.committed_at = now
            if self.settled_at is None and now > self.moved_at and self.assigned:
                self.settled_at = now

    def _run_confluent(self) -> None:
        from confluent_kafka import Consumer, KafkaException, TopicPartition
        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": self.group, "enable.auto.commit": False,
                      "session.timeout.ms": 6000, "heartbeat.interval.ms": 500, "log_level": 0,
                      "fetch.wait.max.ms": self.fetch_wait_ms, "client.id": f"ck-{self.index}"})
        c.subscribe([TOPIC])
        try:
            while not self.stop.is_set():
                c.poll(COMMIT_EVERY_S)
                parts = c.assignment()
                self.assigned = bool(parts)
                if parts:
                    try:
                        c.commit(offsets=[TopicPartition(TOPIC, p.partition, 0) for p in parts], asynchronous=False)
                        self._note(True)
                    except KafkaException:
                        self._note(False)
        finally:
            c.close()

    def _run_kafka_python(self) -> None:
        from kafka import KafkaConsumer
        from kafka.errors import KafkaError
        from kafka.structs import OffsetAndMetadata
        c = KafkaConsumer(bootstrap_servers=self.bootstrap, group_id=self.group, enable_auto_commit=False,
                          session_timeout_ms=6000, heartbeat_interval_ms=500, retry_backoff_ms=50,
                          fetch_max_wait_ms=self.fetch_wait_ms, client_id=f"kp-{self.index}")
        c.subscribe([TOPIC])
        try:
            while not self.stop.is_set():
                c.poll(timeout_ms=int(COMMIT_EVERY_S * 1000))
                parts = c.assignment()
                self.assigned = bool(parts)
                if parts:
                    try:
                        c.commit({tp: OffsetAndMetadata(0, "", -1) for tp in parts})
                        self._note(True)
                    except KafkaError:
                        self._note(False)
        finally:
            c.close()


def coordinator_of(bootstrap: str, group: str) -> int:
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    client = BlockingClient(host, int(port), client_id="failover-bench", timeout=10)
    try:
        answer = client.call(ApiKey.FIND_COORDINATOR, 3, REQUESTS[ApiKey.FIND_COORDINATOR].cls(key=group))
    finally:
        client.close()
    assert answer.error_code == 0, answer
    return answer.node_id


def wait(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.01)


def one_round(client: str, bootstrap: str, group: str, members: int, move, fetch_wait_ms: int) -> float:
    """Seconds from the move until the last member settled."""
    team = [Member(client, bootstrap, group, i, fetch_wait_ms) for i in range(members)]
    for m in team:
        m.start()
    try:
        wait(lambda: all(m.assigned and m.committed_at for m in team), 60, f"{group}: {members} members committing")
        time.sleep(0.5)                                # every member committing steadily
        wait(lambda: all(time.perf_counter() - m.committed_at < 0.3 for m in team), 30, "steady commits")
        old = coordinator_of(bootstrap, group)
        moved_at = time.perf_counter()
        for m in team:
            m.moved_at = moved_at
        move(group, old)
        wait(lambda: all(m.settled_at is not None for m in team), 60, f"{group}: members settled after the move")
        return max(m.settled_at for m in team) - moved_at
    finally:
        for m in team:
            m.stop.set()
        for m in team:
            m.join(30)


def measure(client: str, make_broker, rounds: int, members: int, fetch_wait_ms: int) -> list[float]:
    """One broker (cluster) per round, so no round inherits another's state."""
    times = []
    for r in range(rounds):
        with make_broker() as (bootstrap, move):
            times.append(one_round(client, bootstrap, f"failover-{client}-{r}", members, move, fetch_wait_ms))
    return times


class Ours:
    def __enter__(self):
        from broker.cli.faults import AdminClient
        self.tmp = tempfile.TemporaryDirectory(prefix="groupbroker-failover-bench-")
        data = Path(self.tmp.name) / "data"
        self.broker = BrokerProcess(data, Path(self.tmp.name) / "broker.log",
                                    {**TEST_DEFAULTS, "groupbroker.admin.port": 0,
                                     "group.min.session.timeout.ms": 1000},
                                    nodes=3, repo=REPO).start()
        from confluent_kafka.admin import AdminClient as Admin, NewTopic
        topics = Admin({"bootstrap.servers": self.broker.bootstrap})
        for future in topics.create_topics([NewTopic(TOPIC, PARTITIONS, 3)]).values():
            future.result(15)
        admin = self.broker.wait_for_log(r"admin endpoint listening on (\S+)").group(1)
        self.admin = AdminClient(admin, (data / "admin.token").read_text().strip())

        def move(group: str, old: int) -> None:
            self.admin.faults.move_coordinator(group=group, node=(old + 1) % 3)
        return self.broker.bootstrap, move

    def __exit__(self, *exc) -> None:
        self.admin.close()
        self.broker.stop()
        self.tmp.cleanup()


class Mock:
    """A fresh mock cluster for each round, moved with rd_kafka_mock_coordinator_set. That alone
    changes only what FindCoordinator answers: the old broker goes on serving the group, so a
    member never notices the move (``refusing=False``, shown for reference). With ``refusing``,
    the old broker also answers the group's requests NOT_COORDINATOR, as a real failover does:
    the same move as ours, minus the replay."""

    def __init__(self, refusing: bool):
        self.refusing = refusing

    def __enter__(self):
        self.mock = MockCluster(brokers=3)
        self.mock.create_topic(TOPIC, PARTITIONS)

        def move(group: str, old: int) -> None:
            if self.refusing:
                for api in (ApiKey.OFFSET_COMMIT, ApiKey.HEARTBEAT, ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP,
                            ApiKey.OFFSET_FETCH):
                    self.mock.push_broker_errors(old, api, NOT_COORDINATOR, MOCK_REFUSALS)
            self.mock.coordinator_set("group", group, old % 3 + 1)      # mock broker ids are 1-3
        return self.mock.bootstrap, move

    def __exit__(self, *exc) -> None:
        self.mock.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--members", type=int, default=5)
    ap.add_argument("--fetch-wait-ms", type=int, nargs="+", default=[500, 10],
                    help="the members' fetch.wait.max.ms (fetch_max_wait_ms), one table each")
    args = ap.parse_args()
    runs = [("confluent-kafka", "mock, old broker refusing", lambda: Mock(refusing=True)),
            ("confluent-kafka", "mock, coordinator_set alone", lambda: Mock(refusing=False)),
            ("confluent-kafka", "ours", Ours), ("kafka-python", "ours", Ours)]
    for fetch_wait_ms in args.fetch_wait_ms:
        rows, peer = [], None
        for client, name, make in runs:
            times = measure(client, make, args.rounds, args.members, fetch_wait_ms)
            median = statistics.median(times)
            peer = peer or median                 # the first run: the mock making the same move
            rows.append([f"{client} / {name}", f"{median * 1000:.0f}", f"{max(times) * 1000:.0f}",
                         f"{median / peer:.2f}"])
        print(table(f"\ncoordinator move -> every member of a {args.members}-member group settled with the "
                    f"new coordinator; members' fetch wait {fetch_wait_ms} ms; {args.rounds} rounds",
                    ["members / broker", "median ms", "worst ms", "vs mock"], rows), flush=True)
    print("vs mock: over the refusing mock's median. kafka-python 3.0.12 cannot bootstrap from the mock "
          "(its ApiVersions answer does not decode).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
