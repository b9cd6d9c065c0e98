"""Kafka's connection limits over real sockets: max.connections.per.ip (and its overrides) closes
the extra connection at once; max.connections holds new ones unaccepted until a connection
closes; max.connection.creation.rate paces them; the connections already open carry on."""

from __future__ import annotations

import logging
import time

import pytest

from kafka_client.blocking import BlockingClient, ConnectionFailed
from broker.testing.embedded import EmbeddedBroker


@pytest.fixture
def limited(tmp_path):
    brokers = []

    def start(**props) -> EmbeddedBroker:
        broker = EmbeddedBroker(tmp_path / f"data{len(brokers)}", props).start()
        brokers.append(broker)
        # the start's own readiness check connected: wait until the broker has seen it close
        deadline = time.monotonic() + 5
        while broker.broker.connections_open() and time.monotonic() < deadline:
            time.sleep(0.01)
        return broker
    yield start
    for broker in brokers:
        broker.stop()


def client(broker) -> BlockingClient:
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    return BlockingClient(host, int(port), timeout=5)


def answers(c: BlockingClient) -> bool:
    try:
        c.negotiate()
    except ConnectionFailed:
        return False
    return True


def test_a_connection_over_max_connections_per_ip_is_closed_at_once(limited, caplog):
    broker = limited(**{"max.connections.per.ip": "3"})
    caplog.set_level(logging.INFO, logger="groupbroker.server")
    kept = [client(broker) for _ in range(3)]
    assert all(answers(c) for c in kept)
    assert not answers(client(broker))
    assert any("Rejected connection from 127.0.0.1, address already has the configured maximum of 3 connections."
               in r.getMessage() for r in caplog.records)
    kept.pop().close()
    deadline = time.monotonic() + 5
    while broker.broker.connections_open() > 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert answers(client(broker))                       # a slot freed: accepted again
    assert all(answers(c) for c in kept)                 # the others carried on


def test_an_override_gives_an_address_its_own_limit(limited):
    broker = limited(**{"max.connections.per.ip": "0", "max.connections.per.ip.overrides": "127.0.0.1:2"})
    first, second = client(broker), client(broker)
    assert answers(first) and answers(second)
    assert not answers(client(broker))


def test_at_max_connections_a_new_connection_waits_until_one_closes(limited):
    broker = limited(**{"max.connections": "2"})
    first, second = client(broker), client(broker)
    assert answers(first) and answers(second)
    third = client(broker)                               # the kernel queues it in the backlog
    third.sock.settimeout(0.5)
    with pytest.raises(ConnectionFailed):                 # not accepted: no answer
        third.negotiate()
    third.close()
    waiting = client(broker)
    first.close()
    assert answers(waiting)                              # accepted once a slot freed
    assert answers(second)


def test_the_connection_creation_rate_paces_new_connections(limited):
    broker = limited(**{"max.connection.creation.rate": "4"})
    time.sleep(1.1)                                      # the start's own connection out of the window
    started = time.monotonic()
    opened = [client(broker) for _ in range(8)]
    assert all(answers(c) for c in opened)
    assert 0.9 < time.monotonic() - started < 3          # 4 now, 4 a second later
