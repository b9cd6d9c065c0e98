"""Issue 15 acceptance: real clients run a consumer group and commit offsets over SASL_SSL with
SCRAM-SHA-512, over SSL with client certificates and over SASL_PLAINTEXT with PLAIN
(kafka-python 3.0.12, aiokafka, confluent-kafka and kcat), and a wrong password reaches each
of them as its authentication error at once, while the broker logs who and why."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import time
import uuid

import pytest

from broker.testing.embedded import EmbeddedBroker
from tests.support.processes import require_tool
from tests.support.security import (CERT_PRINCIPAL, MODES, add_users, aiokafka_settings, kafka_python_settings,
                                    librdkafka_settings, make_certs, secured_props)

RECORDS = 6


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def secured(tmp_path_factory, certs):
    data = tmp_path_factory.mktemp("data")
    add_users(data)
    broker = EmbeddedBroker(data, secured_props(certs, **{"group.initial.rebalance.delay.ms": "0"})).start()
    broker.faults.record()
    yield broker
    broker.stop()


def produce_plain(broker, topic: str) -> None:
    import confluent_kafka
    producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap_for("PLAINTEXT")})
    for i in range(RECORDS):
        producer.produce(topic, f"m{i}".encode())
    assert producer.flush(10) == 0


def committed(broker, group: str, topic: str) -> int:
    import confluent_kafka
    consumer = confluent_kafka.Consumer({"bootstrap.servers": broker.bootstrap_for("PLAINTEXT"), "group.id": group})
    try:
        [found] = consumer.committed([confluent_kafka.TopicPartition(topic, 0)], timeout=10)
        return found.offset
    finally:
        consumer.close()


def principals(broker, group: str) -> set[str]:
    return {r.principal for r in broker.recorded() if r.group == group and r.api in ("JoinGroup", "OffsetCommit")}


def expected_principal(mode: str) -> str:
    return CERT_PRINCIPAL if MODES[mode][1] is None else "User:alice"


def run_kafka_python(broker, mode, certs, topic, group) -> list[bytes]:
    from kafka import KafkaConsumer
    consumer = KafkaConsumer(topic, group_id=group, bootstrap_servers=broker.bootstrap_for(MODES[mode][0]),
                             auto_offset_reset="earliest", enable_auto_commit=False, consumer_timeout_ms=15000,
                             **kafka_python_settings(mode, certs))
    try:
        values = [record.value for _, record in zip(range(RECORDS), consumer)]
        consumer.commit()
        return values
    finally:
        consumer.close()


def run_aiokafka(broker, mode, certs, topic, group) -> list[bytes]:
    from aiokafka import AIOKafkaConsumer

    async def consume():
        consumer = AIOKafkaConsumer(topic, group_id=group, bootstrap_servers=broker.bootstrap_for(MODES[mode][0]),
                                    auto_offset_reset="earliest", enable_auto_commit=False,
                                    **aiokafka_settings(mode, certs))
        await consumer.start()
        try:
            values = []
            async with asyncio.timeout(15):
                async for record in consumer:
                    values.append(record.value)
                    if len(values) == RECORDS:
                        break
            await consumer.commit()
            return values
        finally:
            await consumer.stop()
    return asyncio.run(consume())


def run_confluent(broker, mode, certs, topic, group) -> list[bytes]:
    import confluent_kafka
    consumer = confluent_kafka.Consumer({"bootstrap.servers": broker.bootstrap_for(MODES[mode][0]),
                                         "group.id": group, "auto.offset.reset": "earliest",
                                         "enable.auto.commit": False, **librdkafka_settings(mode, certs)})
    try:
        consumer.subscribe([topic])
        values, deadline = [], time.monotonic() + 15
        while len(values) < RECORDS and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                values.append(message.value())
        consumer.commit(asynchronous=False)
        return values
    finally:
        consumer.close()


def run_kcat(broker, mode, certs, topic, group) -> list[bytes]:
    kcat = require_tool("kcat", "apt-get install kcat")
    settings = [arg for key, value in librdkafka_settings(mode, certs).items() for arg in ("-X", f"{key}={value}")]
    out = subprocess.run([kcat, "-b", broker.bootstrap_for(MODES[mode][0]), "-G", group, *settings,
                          "-X", "auto.offset.reset=earliest", "-c", str(RECORDS), "-f", "%s\n", "-q", topic],
                         capture_output=True, timeout=30, check=True)
    return out.stdout.split()


CLIENTS = {"kafka-python": run_kafka_python, "aiokafka": run_aiokafka, "confluent-kafka": run_confluent,
           "kcat": run_kcat}


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("client", list(CLIENTS))
def test_a_group_reads_and_commits_over_each_security_protocol(secured, certs, client, mode):
    topic = group = f"{client}-{mode}-{uuid.uuid4().hex[:6]}"
    produce_plain(secured, topic)
    values = CLIENTS[client](secured, mode, certs, topic, group)
    assert values == [f"m{i}".encode() for i in range(RECORDS)]
    assert committed(secured, group, topic) == RECORDS
    # the coordinator saw the member as the principal it authenticated as
    assert principals(secured, group) == {expected_principal(mode)}


SCRAM, PLAIN = "sasl_ssl-scram", "sasl_plaintext-plain"
GENERIC = "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"
PLAIN_MESSAGE = "Authentication failed: Invalid username or password"


@pytest.mark.parametrize("mode, message", [(SCRAM, GENERIC), (PLAIN, PLAIN_MESSAGE)])
def test_a_wrong_password_fails_confluent_at_once(secured, certs, caplog, mode, message):
    import confluent_kafka
    errors = []
    started = time.monotonic()
    consumer = confluent_kafka.Consumer({"bootstrap.servers": secured.bootstrap_for(MODES[mode][0]), "group.id": "g",
                                         "error_cb": errors.append,
                                         **librdkafka_settings(mode, certs, password="wrong")})
    try:
        while not errors and time.monotonic() - started < 5:
            consumer.poll(0.1)
    finally:
        consumer.close()
    assert errors and errors[0].code() == confluent_kafka.KafkaError._AUTHENTICATION
    assert message in errors[0].str()
    assert_broker_logged_failure(caplog, mode)


@pytest.mark.parametrize("mode, message", [(SCRAM, GENERIC), (PLAIN, PLAIN_MESSAGE)])
def test_a_wrong_password_fails_kafka_python_at_once(secured, certs, caplog, mode, message):
    from kafka import KafkaConsumer
    from kafka.errors import KafkaTimeoutError
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="kafka"), pytest.raises(KafkaTimeoutError):
        # kafka-python retries its bootstrap until bootstrap_timeout_ms, logging each failure
        KafkaConsumer(bootstrap_servers=secured.bootstrap_for(MODES[mode][0]), bootstrap_timeout_ms=2000,
                      **kafka_python_settings(mode, certs, password="wrong"))
    assert time.monotonic() - started < 4
    client_errors = [r.getMessage() for r in caplog.records if r.name.startswith("kafka.")]
    assert any("SaslAuthenticationFailedError" in m and message in m for m in client_errors), client_errors
    assert_broker_logged_failure(caplog, mode)


@pytest.mark.parametrize("mode, message", [(SCRAM, GENERIC), (PLAIN, PLAIN_MESSAGE)])
def test_a_wrong_password_fails_aiokafka_at_once(secured, certs, caplog, mode, message):
    from aiokafka import AIOKafkaConsumer
    from aiokafka.errors import KafkaConnectionError

    async def start():
        consumer = AIOKafkaConsumer(bootstrap_servers=secured.bootstrap_for(MODES[mode][0]),
                                    **aiokafka_settings(mode, certs, password="wrong"))
        try:
            await consumer.start()
        finally:
            await consumer.stop()
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="aiokafka"), pytest.raises(KafkaConnectionError):
        asyncio.run(start())
    assert time.monotonic() - started < 3
    client_errors = [r.getMessage() for r in caplog.records if r.name.startswith("aiokafka")]
    assert any("[Error 58] SaslAuthenticationFailed" in m and message in m for m in client_errors), client_errors
    assert_broker_logged_failure(caplog, mode)


def assert_broker_logged_failure(caplog, mode: str) -> None:
    lines = [r.getMessage() for r in caplog.records if r.name == "groupbroker.server"]
    mechanism = MODES[mode][1]
    assert any(f"authentication failed for 'alice' with {mechanism}" in line for line in lines), lines


def test_fault_injection_fails_one_principals_authentication_on_purpose(secured, certs, caplog):
    import confluent_kafka
    secured.faults.fail_authentication(principal="User:alice", count=1)

    def first_error(user: str, password: str):
        errors, started = [], time.monotonic()
        producer = confluent_kafka.Producer({"bootstrap.servers": secured.bootstrap_for("SASL_PLAINTEXT"),
                                             "error_cb": errors.append,
                                             **librdkafka_settings(PLAIN, certs, user=user, password=password)})
        while not errors and time.monotonic() - started < 1.5:
            producer.poll(0.1)
        return errors[0] if errors else None

    refused = first_error("alice", "alice-secret")            # right password, refused on purpose
    assert refused is not None and refused.code() == confluent_kafka.KafkaError._AUTHENTICATION
    assert "invalid credentials with SASL mechanism PLAIN" in refused.str()
    assert first_error("bob", "bob-secret") is None            # another principal is not touched
    assert first_error("alice", "alice-secret") is None        # the fault fired once
    assert any("refused by fault injection" in r.getMessage() for r in caplog.records)


def test_a_cluster_advertises_each_listeners_own_endpoints(tmp_path, certs):
    """With --nodes 3, node i listens on each listener's port + i; a client on the SASL
    listener is told the SASL endpoints of every node (coordinator included), and runs its
    group there."""
    from confluent_kafka.admin import AdminClient
    add_users(tmp_path)
    cluster = EmbeddedBroker(tmp_path, secured_props(certs, **{"group.initial.rebalance.delay.ms": "0"}),
                             nodes=3).start()
    try:
        sasl = cluster.bootstrap_for("SASL_PLAINTEXT")
        settings = {"bootstrap.servers": sasl.split(",")[0], **librdkafka_settings(PLAIN, certs)}
        brokers = AdminClient(settings).list_topics(timeout=10).brokers
        assert sorted(f"{b.host}:{b.port}" for b in brokers.values()) == sorted(sasl.split(","))
        topic = group = f"cluster-{uuid.uuid4().hex[:6]}"
        produce_plain(cluster, topic)
        assert run_confluent(cluster, PLAIN, certs, topic, group) == [f"m{i}".encode() for i in range(RECORDS)]
        assert committed(cluster, group, topic) == RECORDS
    finally:
        cluster.stop()


def test_a_wrong_password_fails_kcat_at_once(secured, certs, caplog):
    kcat = require_tool("kcat", "apt-get install kcat")
    settings = [arg for key, value in librdkafka_settings(SCRAM, certs, password="wrong").items()
                for arg in ("-X", f"{key}={value}")]
    started = time.monotonic()
    out = subprocess.run([kcat, "-b", secured.bootstrap_for("SASL_SSL"), *settings, "-L"], capture_output=True,
                         text=True, timeout=30)
    assert out.returncode != 0 and time.monotonic() - started < 10
    assert GENERIC in out.stderr
    assert_broker_logged_failure(caplog, SCRAM)
