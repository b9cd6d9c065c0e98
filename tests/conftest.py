"""Brokers for tests: a ``groupbroker serve`` subprocess, or a broker in this trio run."""

import pytest

from apache_kafka.artefacts import KafkaUnavailable
from apache_kafka.process import KafkaProcess

from broker.config import BrokerConfig
from broker.dispatch.served import SERVED_APIS
from broker.server.broker import Broker
from broker.testing.launcher import TEST_DEFAULTS, BrokerProcess
from protocol.api_keys import ApiKey
from tests.support.processes import missing

pytest_plugins = ["pytester"]           # tests/integration/test_pytest_plugin.py runs a user's test session


@pytest.fixture
def start_broker(tmp_path):
    """Start ``groupbroker serve`` with -o overrides; at the end SIGTERM must stop it with 0."""
    started = []

    def start(overrides: dict) -> BrokerProcess:
        b = BrokerProcess(tmp_path / "data", tmp_path / "broker.log", overrides).start()
        started.append(b)
        return b

    yield start
    for b in started:
        try:
            if b.running():
                assert b.stop() == 0, "SIGTERM must stop the broker with exit code 0"
        finally:
            b.kill()


@pytest.fixture
def broker(start_broker) -> BrokerProcess:
    """A throwaway broker for client interop: no initial delay, short sessions allowed. Modules that need
    another broker define their own ``broker`` fixture, which takes precedence."""
    return start_broker({"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 1000})


@pytest.fixture
def serve_broker(nursery, tmp_path):
    """Run a broker inside the test's trio run on a free port, with Kafka-named settings."""
    started = []

    async def serve(props: dict) -> Broker:
        b = Broker(BrokerConfig.build(props, port=0, data_dir=str(tmp_path)))
        await nursery.start(b.serve)
        await b.ready.wait()
        started.append(b)
        return b

    yield serve
    for b in started:
        b.stop()


@pytest.fixture(scope="session")
def spark():
    """One local Spark for the whole run (each start costs seconds): 2 cores, 2 shuffle
    partitions, bound to 127.0.0.1, no progress bar."""
    from pipeline.job import spark_session
    session = spark_session("local[2]", progress=False, shuffle_partitions=2)
    yield session
    session.stop()


KAFKA_COSTS: list[str] = []        # what the oracle cost this run (printed in the summary)

#: The settings both brokers of a differential test run with (Kafka's names): our test
#: defaults, and no initial rebalance delay, so a join phase ends on the same event in both;
#: consumer groups of at most 4 members, so that a test can fill one; streams groups assigned at
#: once (no initial delay, no assignment interval: a test sets them per group to see them).
ORACLE_SETTINGS = {**TEST_DEFAULTS, "group.initial.rebalance.delay.ms": "0", "group.consumer.max.size": "4",
                   "group.share.max.size": "4", "group.streams.max.size": "4",
                   "group.streams.initial.rebalance.delay.ms": "0", "group.streams.assignment.interval.ms": "0"}



@pytest.fixture(scope="session")
def kafka_oracle(tmp_path_factory):
    """Apache Kafka 4.3.1 (apache_kafka), started once per run when a test asks for it.
    Without Java or Maven the test is skipped, or fails in CI."""
    try:
        kafka = KafkaProcess(tmp_path_factory.mktemp("kafka-oracle"), ORACLE_SETTINGS).start()
    except KafkaUnavailable as e:
        missing(str(e))
    started_rss = kafka.rss_bytes()
    yield kafka
    KAFKA_COSTS.append(f"oracle: Apache Kafka 4.3.1 started in {kafka.startup_seconds:.1f} s (format and "
                       f"warm-up included), RSS {started_rss / 2**20:.0f} MB then, "
                       f"{kafka.rss_bytes() / 2**20:.0f} MB at the end")
    kafka.stop()


@pytest.fixture(scope="session")
def oracle_twin(tmp_path_factory) -> BrokerProcess:
    """The groupbroker that differential tests compare with ``kafka_oracle``: same settings,
    same node id, one for the run (tests use their own group and topic names on both)."""
    home = tmp_path_factory.mktemp("oracle-twin")
    # its fault endpoint only records requests (tests/support/recorded.py): what clients sent
    twin = BrokerProcess(home / "data", home / "broker.log", {**ORACLE_SETTINGS, "groupbroker.admin.port": "0"}).start()
    yield twin
    twin.stop()


def pytest_terminal_summary(terminalreporter) -> None:
    from tests.support import differential
    if differential.COMPARISONS:
        keys = {key for key, _ in differential.COMPARED}
        unseen = sorted(ApiKey(k).name for k in SERVED_APIS - keys)
        terminalreporter.write_line(
            f"oracle: {differential.COMPARISONS} answers of groupbroker and Apache Kafka compared field by "
            f"field, over {len(keys)} API keys and {len(differential.COMPARED)} API versions"
            + (f"; not compared: {', '.join(unseen)}" if unseen else ""))
    for line in KAFKA_COSTS:
        terminalreporter.write_line(line)
