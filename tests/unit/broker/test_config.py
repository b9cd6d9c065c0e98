"""Broker configuration by Kafka's names: properties files, -o overrides, and refusals."""

import subprocess
import sys

import pytest

from broker.config import BrokerConfig, ConfigError, parse_properties


def test_properties_file_syntax():
    props = parse_properties("# comment\n! also a comment\n\nnum.partitions=6\n"
                             "group.max.size : 10\nlog.dirs = /tmp/x\n")
    assert props == {"num.partitions": "6", "group.max.size": "10", "log.dirs": "/tmp/x"}
    with pytest.raises(ConfigError):
        parse_properties("just-a-key\n")


def test_kafka_names_reach_broker_and_coordinator_settings():
    config = BrokerConfig.build({
        "num.partitions": "6", "auto.create.topics.enable": "false", "node.id": "3",
        "advertised.listeners": "PLAINTEXT://broker.local:19092",
        "group.initial.rebalance.delay.ms": "0", "group.min.session.timeout.ms": "500",
        "offsets.retention.minutes": "1", "log.retention.hours": "2"}, port=0)
    assert (config.num_partitions, config.auto_create_topics_enable, config.node_id) == (6, False, 3)
    assert (config.listeners[0].advertised_host, config.listeners[0].advertised_port) == ("broker.local", 19092)
    assert config.coordinator.group_initial_rebalance_delay_ms == 0
    assert config.coordinator.group_min_session_timeout_ms == 500
    assert config.coordinator.offsets_retention_ms == 60_000
    assert config.log_retention_ms == 2 * 3_600_000


def test_the_assignment_interval_has_kafkas_names_defaults_and_bounds():
    """Kafka 4.3's batching of consumer-group target assignments: 1 s by default, within
    [.min, .max] = [0, 15 s]; the offload switch of KIP-1263 is no setting of Kafka 4.3.1."""
    c = BrokerConfig.build({}).coordinator
    assert (c.group_consumer_assignment_interval_ms, c.group_consumer_min_assignment_interval_ms,
            c.group_consumer_max_assignment_interval_ms) == (1_000, 0, 15_000)
    assert BrokerConfig.build({"group.consumer.assignment.interval.ms": "0"}).coordinator \
        .group_consumer_assignment_interval_ms == 0
    for props, message in [
        ({"group.consumer.assignment.interval.ms": "15001"},
         "group.consumer.assignment.interval.ms must be less than or equal to "
         "group.consumer.max.assignment.interval.ms"),
        ({"group.consumer.min.assignment.interval.ms": "2000"},
         "group.consumer.assignment.interval.ms must be greater than or equal to "
         "group.consumer.min.assignment.interval.ms"),
        ({"group.consumer.min.assignment.interval.ms": "600", "group.consumer.max.assignment.interval.ms": "500",
          "group.consumer.assignment.interval.ms": "550"},
         "group.consumer.max.assignment.interval.ms must be greater than or equal to "
         "group.consumer.min.assignment.interval.ms"),
        ({"group.consumer.assignment.interval.ms": "-1"},
         "Invalid value -1 for configuration group.consumer.assignment.interval.ms: Value must be at least 0"),
        ({"group.consumer.assignor.offload.enable": "true"}, "unknown config name"),
    ]:
        with pytest.raises(ConfigError, match=message):
            BrokerConfig.build(props)


def test_explicit_cli_values_win_over_properties():
    config = BrokerConfig.build({"log.dirs": "/from/file"}, data_dir="/from/cli", port=None)
    assert config.data_dir == "/from/cli" and config.port == 9092


@pytest.mark.parametrize("props", [{"no.such.setting": "1"}, {"num.partitions": "many"},
                                   {"auto.create.topics.enable": "yes"},
                                   {"advertised.listeners": "PLAINTEXT://nohost"}])
def test_bad_settings_are_refused(props):
    with pytest.raises(ConfigError):
        BrokerConfig.build(props)


def test_serve_refuses_a_bad_override_with_exit_2(tmp_path):
    out = subprocess.run([sys.executable, "-m", "broker", "serve", "--port", "0", "--data-dir",
                          str(tmp_path), "-o", "no.such.setting=1"], capture_output=True, text=True,
                         timeout=30)
    assert out.returncode == 2 and out.stdout == ""
    assert "no.such.setting" in out.stderr


def test_connection_and_fetch_limits_have_kafkas_names_defaults_and_bounds():
    default = BrokerConfig.build({})
    assert (default.connections_max_idle_ms, default.fetch_max_bytes) == (600_000, 57_671_680)
    config = BrokerConfig.build({"connections.max.idle.ms": "-1", "fetch.max.bytes": "1024"})
    assert (config.connections_max_idle_ms, config.fetch_max_bytes) == (-1, 1024)
    with pytest.raises(ConfigError, match="at least 1024"):
        BrokerConfig.build({"fetch.max.bytes": "1023"})


def test_log_cleaner_settings_use_kafkas_names_and_validators():
    cfg = BrokerConfig.build({"log.cleanup.policy": "compact, delete", "log.cleaner.backoff.ms": "100",
                              "log.cleaner.min.cleanable.ratio": "0.1"})
    assert cfg.log_cleanup_policy == frozenset({"compact", "delete"})
    assert (cfg.log_cleaner_backoff_ms, cfg.log_cleaner_min_cleanable_ratio) == (100, 0.1)
    assert BrokerConfig().log_cleanup_policy == frozenset({"delete"})
    for bad in ({"log.cleanup.policy": "shred"}, {"log.cleanup.policy": ""},
                {"log.cleaner.min.cleanable.ratio": "1.5"}, {"log.cleaner.delete.retention.ms": "-1"}):
        with pytest.raises(ConfigError):
            BrokerConfig.build(bad)


def test_flush_settings_have_kafkas_names_and_defaults():
    default = BrokerConfig.build({}).flush_policy
    assert (default.interval_messages, default.periodic) == (2**63 - 1, False)
    policy = BrokerConfig.build({"log.flush.interval.messages": "1", "log.flush.interval.ms": "200",
                                 "log.flush.scheduler.interval.ms": "50"}).flush_policy
    assert (policy.due(1), policy.age_ms, policy.scheduler_interval_ms) == (True, 200, 50)
    assert BrokerConfig.build({"log.flush.scheduler.interval.ms": "300"}).flush_policy.age_ms == 300
    with pytest.raises(ConfigError, match="at least 1"):
        BrokerConfig.build({"log.flush.interval.messages": "0"})


def test_the_replaced_fsync_switch_is_refused_with_what_to_use_instead():
    with pytest.raises(ConfigError, match="log.flush.interval.messages=1"):
        BrokerConfig.build({"groupbroker.offsets.fsync": "true"})
