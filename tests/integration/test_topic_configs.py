"""Topic configs as Kafka 4 has them, through real admin clients: validated at CreateTopics with
Kafka's messages, stored, described with sources and synonyms, altered (whole set and one at a
time), kept across restarts, and applied to the partitions."""

from __future__ import annotations

import pytest

from tests.support.processes import import_client, wait_until

ck = import_client("confluent_kafka")
kafka = import_client("kafka")
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,  # noqa: E402
                                   ConfigSource, NewTopic)

TOPIC = ConfigResource.Type.TOPIC


def admin(broker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def create(broker, name: str, config: dict, *, validate_only: bool = False, partitions: int = 1):
    client = admin(broker)                   # kept alive until the future is done
    future = client.create_topics([NewTopic(name, partitions, 1, config=config)],
                                  validate_only=validate_only, operation_timeout=10)[name]
    return future.result(15)


def call(broker, method: str, resource: ConfigResource):
    client = admin(broker)
    return getattr(client, method)([resource])[resource].result(15)


def describe(broker, name: str) -> dict:
    return call(broker, "describe_configs", ConfigResource(TOPIC, name))


@pytest.mark.parametrize("config,message", [
    ({"cleanup.policy": "banana"},
     "Invalid value banana for configuration cleanup.policy: String must be one of: compact, delete"),
    ({"dummy.doesntexist": "1"}, "Unknown topic config name: dummy.doesntexist"),
    ({"retention.ms": "abc"}, "Invalid value abc for configuration retention.ms: Not a number of type LONG"),
    ({"min.insync.replicas": "0"},
     "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1"),
    ({"segment.bytes": "100"},
     "Invalid value 100 for configuration segment.bytes: Value must be at least 1048576"),
])
def test_create_topics_refuses_bad_configs_with_kafkas_message(broker, config, message):
    with pytest.raises(ck.KafkaException) as e:
        create(broker, "bad", config)
    error = e.value.args[0]
    assert error.code() == ck.KafkaError.INVALID_CONFIG and message in error.str()
    assert "bad" not in admin(broker).list_topics(timeout=10).topics


def test_validate_only_changes_nothing(broker):
    create(broker, "maybe", {"cleanup.policy": "compact"}, validate_only=True)
    assert "maybe" not in admin(broker).list_topics(timeout=10).topics


def test_describe_shows_overrides_defaults_and_synonyms(broker):
    create(broker, "changelog", {"cleanup.policy": "compact", "retention.ms": "1000"})
    configs = describe(broker, "changelog")
    assert configs["cleanup.policy"].value == "compact"                # what Kafka Connect checks
    assert configs["cleanup.policy"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert configs["retention.ms"].value == "1000"
    assert configs["segment.bytes"].value == "1073741824"
    assert configs["segment.bytes"].source == ConfigSource.DEFAULT_CONFIG.value
    assert configs["max.message.bytes"].value == "1048588"
    assert len(configs) == 33                                            # Kafka 4.3's topic configs
    resource = ConfigResource(TOPIC, "nope")
    with pytest.raises(ck.KafkaException) as e:
        call(broker, "describe_configs", resource)
    assert e.value.args[0].code() == ck.KafkaError.UNKNOWN_TOPIC_OR_PART


def test_kafka_python_describes_and_alters(broker):
    from kafka.admin import ConfigResource as KResource, ConfigResourceType, KafkaAdminClient, NewTopic as KTopic
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        client.create_topics([KTopic("kp", 1, 1, topic_configs={"retention.bytes": "5000"})])
        described = client.describe_configs([KResource(ConfigResourceType.TOPIC, "kp")])
        text = repr(described)
        assert "retention.bytes" in text and "5000" in text
        client.alter_configs([KResource(ConfigResourceType.TOPIC, "kp", configs={"retention.ms": "2000"})])
    finally:
        client.close()
    configs = describe(broker, "kp")
    assert configs["retention.ms"].value == "2000"
    assert configs["retention.bytes"].value == "5000"      # kafka-python alters incrementally


def test_incremental_alter_set_delete_append_subtract(broker):
    create(broker, "inc", {"retention.ms": "5000"})
    resource = ConfigResource(TOPIC, "inc", incremental_configs=[
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND),
        ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE),
        ConfigEntry("max.message.bytes", "2000", incremental_operation=AlterConfigOpType.SET)])
    call(broker, "incremental_alter_configs", resource)
    configs = describe(broker, "inc")
    assert configs["cleanup.policy"].value == "delete,compact"
    assert configs["retention.ms"].value == "604800000"
    assert configs["max.message.bytes"].value == "2000"
    wrong = ConfigResource(TOPIC, "inc", incremental_configs=[
        ConfigEntry("retention.ms", "1", incremental_operation=AlterConfigOpType.APPEND)])
    with pytest.raises(ck.KafkaException) as e:
        call(broker, "incremental_alter_configs", wrong)
    assert e.value.args[0].code() == ck.KafkaError.INVALID_CONFIG
    assert "Can't APPEND to key retention.ms because its type is not LIST." in e.value.args[0].str()
    missing = ConfigResource(TOPIC, "missing", incremental_configs=[
        ConfigEntry("retention.ms", "1", incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(ck.KafkaException) as e:
        call(broker, "incremental_alter_configs", missing)
    assert e.value.args[0].code() == ck.KafkaError.UNKNOWN_TOPIC_OR_PART


@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated:DeprecationWarning")  # on purpose
def test_alter_configs_replaces_the_whole_set_and_survives_a_restart(broker):
    create(broker, "whole", {"retention.ms": "5000", "cleanup.policy": "compact"})
    resource = ConfigResource(TOPIC, "whole", set_config={"retention.bytes": "123456"})
    call(broker, "alter_configs", resource)
    broker.restart()
    configs = describe(broker, "whole")
    assert (configs["retention.bytes"].value, configs["retention.ms"].value,
            configs["cleanup.policy"].value) == ("123456", "604800000", "delete")


def test_broker_resource_describes_this_node(broker):
    resource = ConfigResource(ConfigResource.Type.BROKER, "1")
    configs = call(broker, "describe_configs", resource)
    assert configs["group.min.session.timeout.ms"].value == "1000"        # the fixture sets it
    assert configs["group.min.session.timeout.ms"].source == ConfigSource.STATIC_BROKER_CONFIG.value
    assert configs["log.segment.bytes"].value == "1073741824"


def test_configs_are_applied(broker):
    create(broker, "small", {"max.message.bytes": "2000", "message.timestamp.type": "LogAppendTime"})
    producer = ck.Producer({"bootstrap.servers": broker.bootstrap, "compression.type": "none",
                            "message.max.bytes": 100000})
    errors = []
    producer.produce("small", b"x" * 5000, on_delivery=lambda err, msg: errors.append(err))
    producer.flush(10)                                     # a batch of its own
    producer.produce("small", b"ok", timestamp=1_000, on_delivery=lambda err, msg: errors.append(err))
    producer.flush(10)
    assert errors[0] is not None and errors[0].code() == ck.KafkaError.MSG_SIZE_TOO_LARGE
    assert errors[1] is None
    consumer = ck.Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "ts",
                            "auto.offset.reset": "earliest"})
    consumer.subscribe(["small"])
    try:
        message = wait_until(lambda: next(iter(consumer.consume(1, 0.2)), None), 20, "the record")
        kind, ts = message.timestamp()
        assert message.value() == b"ok" and kind == ck.TIMESTAMP_LOG_APPEND_TIME and ts > 1_000_000
    finally:
        consumer.close()


def test_dynamic_broker_defaults_reach_topics_and_groups_keep_their_configs(broker):
    create(broker, "follows", {})
    default = ConfigResource(ConfigResource.Type.BROKER, "1", incremental_configs=[
        ConfigEntry("log.retention.ms", "7777", incremental_operation=AlterConfigOpType.SET)])
    call(broker, "incremental_alter_configs", default)
    assert describe(broker, "follows")["retention.ms"].value == "7777"
    fixed = ConfigResource(ConfigResource.Type.BROKER, "1", incremental_configs=[
        ConfigEntry("num.partitions", "3", incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(ck.KafkaException) as e:
        call(broker, "incremental_alter_configs", fixed)
    assert "Cannot update these configs dynamically: [num.partitions]" in e.value.args[0].str()
    group = ConfigResource(ConfigResource.Type.GROUP, "billing", incremental_configs=[
        ConfigEntry("consumer.session.timeout.ms", "50000", incremental_operation=AlterConfigOpType.SET)])
    call(broker, "incremental_alter_configs", group)
    broker.restart()
    assert describe(broker, "follows")["retention.ms"].value == "7777"
    configs = call(broker, "describe_configs", ConfigResource(ConfigResource.Type.GROUP, "billing"))
    assert configs["consumer.session.timeout.ms"].value == "50000"
