"""pytest plugin (entry point ``pytest11: groupbroker``): a real broker per test.

The ``groupbroker`` fixture starts an :class:`broker.testing.embedded.EmbeddedBroker` on a free port
of 127.0.0.1 with a temporary data dir and fast test settings, records every request it
answers, and stops it after the test. Settings per test::

    @pytest.mark.groupbroker(props={"group.max.size": "3"})
    def test_something(groupbroker): ...

A cluster of nodes (``groupbroker.faults.move_coordinator(...)``, ``stop_node(...)``)::

    @pytest.mark.groupbroker(nodes=3)
    def test_failover(groupbroker): ...

It works the same in plain, asyncio and trio tests (the broker has its own thread).

``pytest --groupbroker-backend=kafka`` runs the same tests against Apache Kafka 4.3.1 itself
(apache_kafka: its jars from Maven Central, fetched once; Java 17 and Maven needed), so a
team can check that what passes against groupbroker passes against Kafka. One Kafka serves every
test with the same settings (started on first use, about 8 s and 300 MB), so tests should use
their own topic and group names; fault injection, restarts, recorded requests and clusters of
nodes are groupbroker's own and fail (or, for ``nodes``, skip) with a message saying so.
"""

from __future__ import annotations

import pytest

from apache_kafka.artefacts import KafkaUnavailable
from apache_kafka.process import KafkaProcess
from apache_kafka.properties import kafka_props

from broker.testing.embedded import EmbeddedBroker
from broker.testing.launcher import TEST_DEFAULTS

BACKENDS = ("groupbroker", "kafka")


#: kafka-python 3.0.12 reads each of its message schemas with importlib.resources' deprecated
#: read_text (which calls the deprecated open_text): two DeprecationWarnings per schema, over
#: 200 in a short test. They are the client library's, say nothing of the user's code, and
#: bury the warnings that do; a warning from the user's own read_text call still shows.
CLIENT_NOISE = ("ignore:read_text is deprecated:DeprecationWarning:kafka\\.protocol",
                "ignore:open_text is deprecated:DeprecationWarning:importlib\\.resources")


def pytest_addoption(parser) -> None:
    parser.getgroup("groupbroker").addoption(
        "--groupbroker-backend", choices=BACKENDS, default="groupbroker",
        help="what the groupbroker fixture starts: groupbroker (default), or Apache Kafka 4.3.1 "
             "itself to check that the same tests pass against Kafka")


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "groupbroker(props, nodes): Kafka-named settings for the "
                                       "groupbroker fixture's broker, e.g. {'group.max.size': '3'}, "
                                       "and its number of nodes (default 1)")
    for line in CLIENT_NOISE:
        config.addinivalue_line("filterwarnings", line)


@pytest.fixture
def groupbroker(request, tmp_path_factory) -> EmbeddedBroker:
    """A running broker: ``.bootstrap_servers``, ``.faults`` (fault injection),
    ``.restart(crash=...)`` and ``.recorded()`` (the requests it answered)."""
    marker = request.node.get_closest_marker("groupbroker")
    props = dict(marker.kwargs.get("props", {})) if marker else {}
    nodes = marker.kwargs.get("nodes", 1) if marker else 1
    if request.config.getoption("groupbroker_backend") == "kafka":
        if nodes != 1:
            pytest.skip("a cluster of nodes in one process is groupbroker's own (--groupbroker-backend=kafka)")
        yield request.getfixturevalue("_groupbroker_kafkas").serving(props)
        return
    broker = EmbeddedBroker(tmp_path_factory.mktemp("groupbroker"), props, nodes=nodes).start()
    broker.faults.record()
    try:
        yield broker
    finally:
        broker.stop()


class ApacheKafka:
    """The ``groupbroker`` fixture's value under ``--groupbroker-backend=kafka``."""

    def __init__(self, process: KafkaProcess):
        self.process = process

    @property
    def bootstrap_servers(self) -> str:
        return self.process.bootstrap_servers

    @property
    def host(self) -> str:
        return self.process.host

    @property
    def port(self) -> int:
        return self.process.port

    @property
    def faults(self):
        raise NotOnKafka("fault injection")

    def recorded(self, *, clear: bool = False):
        raise NotOnKafka("recorded requests")

    def restart(self, *, crash: bool = False):
        raise NotOnKafka("restarts")


class NotOnKafka(RuntimeError):
    def __init__(self, what: str):
        super().__init__(f"{what}: groupbroker's own, not available with --groupbroker-backend=kafka")


class _KafkaPool:
    """One Kafka per distinct set of settings, started when a test first asks for it."""

    def __init__(self, home):
        self.home, self.running = home, {}

    def serving(self, props: dict) -> ApacheKafka:
        settings = kafka_props({**TEST_DEFAULTS, **props})
        key = tuple(sorted(settings.items()))
        if key not in self.running:
            try:
                self.running[key] = KafkaProcess(self.home / f"kafka-{len(self.running)}", settings).start()
            except KafkaUnavailable as e:
                pytest.fail(f"--groupbroker-backend=kafka: {e}", pytrace=False)
        return ApacheKafka(self.running[key])

    def stop(self) -> None:
        for process in self.running.values():
            process.stop()


@pytest.fixture(scope="session")
def _groupbroker_kafkas(tmp_path_factory):
    pool = _KafkaPool(tmp_path_factory.mktemp("groupbroker-kafka"))
    yield pool
    pool.stop()
