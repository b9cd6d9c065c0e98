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
"""

from __future__ import annotations

import pytest

from broker.testing.embedded import EmbeddedBroker


#: kafka-python 3.0.12 reads each of its message schemas with importlib.resources' deprecated
#: read_text (which calls the deprecated open_text): two DeprecationWarnings per schema, over
#: 200 in a short test. They are the client library's, say nothing of the user's code, and
#: bury the warnings that do; a warning from the user's own read_text call still shows.
CLIENT_NOISE = ("ignore:read_text is deprecated:DeprecationWarning:kafka\\.protocol",
                "ignore:open_text is deprecated:DeprecationWarning:importlib\\.resources")


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
    broker = EmbeddedBroker(tmp_path_factory.mktemp("groupbroker"), props, nodes=nodes).start()
    broker.faults.record()
    try:
        yield broker
    finally:
        broker.stop()
