"""``groupbroker certs`` and ``groupbroker users`` from the shell, against ``groupbroker serve``:
TLS one command away, SCRAM users added and removed while the broker runs, and security
settings the broker cannot serve refused before it listens."""

from __future__ import annotations

import subprocess
import sys

import pytest

from broker.testing.launcher import BrokerProcess
from tests.support.security import PLAIN_JAAS


def groupbroker(*args, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "broker", *args], capture_output=True, text=True, timeout=60,
                          **kwargs)


def test_certs_configure_an_ssl_listener_that_kafka_python_uses_with_the_printed_settings(tmp_path):
    from kafka import KafkaConsumer, KafkaProducer
    certs = tmp_path / "certs"
    made = groupbroker("certs", str(certs), "--host", "localhost", "--host", "127.0.0.1")
    assert made.returncode == 0, made.stderr
    for name in ("ca.pem", "broker.pem", "broker.key", "client.pem", "client.key", "broker.properties"):
        assert (certs / name).is_file()
    assert "security_protocol='SSL'" in made.stdout and f"ssl.ca.location={certs / 'ca.pem'}" in made.stdout
    properties = dict(line.split("=", 1) for line in (certs / "broker.properties").read_text().splitlines()
                      if line and not line.startswith("#"))
    # the written settings, on free ports
    overrides = {**properties, "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
                 "ssl.client.auth": "required", "group.initial.rebalance.delay.ms": "0"}
    broker = BrokerProcess(tmp_path / "data", tmp_path / "broker.log", overrides).start()
    try:
        tls = dict(bootstrap_servers=broker.bootstrap_for("SSL"), security_protocol="SSL",
                   ssl_cafile=str(certs / "ca.pem"), ssl_certfile=str(certs / "client.pem"),
                   ssl_keyfile=str(certs / "client.key"))
        producer = KafkaProducer(**tls)
        producer.send("over-tls", b"hello").get(10)
        producer.close()
        consumer = KafkaConsumer("over-tls", group_id="g", auto_offset_reset="earliest",
                                 consumer_timeout_ms=10000, **tls)
        assert [r.value for _, r in zip(range(1), consumer)] == [b"hello"]
        consumer.commit()
        consumer.close()
        assert "listening on SSL on 127.0.0.1:" in broker.log_since_start()
    finally:
        assert broker.stop() == 0


def test_users_added_and_removed_while_the_broker_runs(tmp_path):
    import confluent_kafka
    data = tmp_path / "data"
    broker = BrokerProcess(data, tmp_path / "broker.log", {
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256"}).start()

    def authenticates(password: str) -> bool:
        errors = []
        producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap_for("SASL_PLAINTEXT"),
                                             "security.protocol": "sasl_plaintext", "sasl.mechanism": "SCRAM-SHA-256",
                                             "sasl.username": "carol", "sasl.password": password,
                                             "error_cb": errors.append})
        return producer.list_topics(timeout=3) is not None and not errors
    try:
        added = groupbroker("users", "--data-dir", str(data), "add", "carol", "--mechanism", "SCRAM-SHA-256",
                            "--password", "carol-secret", "--iterations", "8192")
        assert added.returncode == 0, added.stderr
        listed = groupbroker("users", "--data-dir", str(data), "list")
        assert listed.stdout == "carol\tSCRAM-SHA-256 (8192 iterations)\n"
        assert "carol-secret" not in (data / "security" / "scram-credentials.json").read_text()
        assert authenticates("carol-secret")
        assert groupbroker("users", "--data-dir", str(data), "remove", "carol").returncode == 0
        with pytest.raises(confluent_kafka.KafkaException):
            authenticates("carol-secret")
        assert "authentication failed for 'carol' with SCRAM-SHA-256" in broker.log_since_start()
    finally:
        assert broker.stop() == 0
    refused = groupbroker("users", "--data-dir", str(data), "add", "dave", "--password", "x", "--iterations", "100")
    assert refused.returncode == 1 and "Too few iterations" in refused.stderr


@pytest.mark.parametrize("overrides, message", [
    (["listeners=SASL_PLAINTEXT://127.0.0.1:0"], "GSSAPI (Kafka's default) is not served"),
    (["listeners=SSL://127.0.0.1:0"], "needs a key store"),
    (["listeners=SASL_SSL://127.0.0.1:0", "sasl.enabled.mechanisms=PLAIN",
      f"listener.name.sasl_ssl.plain.sasl.jaas.config={PLAIN_JAAS}"], "needs a key store"),
])
def test_serve_refuses_security_it_cannot_serve_before_listening(tmp_path, overrides, message):
    result = groupbroker("serve", "--data-dir", str(tmp_path), *[a for o in overrides for a in ("-o", o)])
    assert result.returncode == 2 and result.stdout == ""
    assert message in result.stderr
