"""Issue 15 acceptance, ACLs: Kafka's admin clients manage ACLs (CreateAcls, DescribeAcls,
DeleteAcls) on a broker with Kafka's StandardAuthorizer; a member without READ on its group gets
GROUP_AUTHORIZATION_FAILED in its client and proceeds once the ACL is granted; a topic without
DESCRIBE is invisible in Metadata; ACLs survive a crash."""

from __future__ import annotations

import time
import uuid

import pytest

from broker.testing.embedded import EmbeddedBroker

USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        + " ".join(f'user_{n}="{p}"' for n, p in USERS.items()) + ";")


@pytest.fixture(scope="module")
def authorized(tmp_path_factory):
    broker = EmbeddedBroker(tmp_path_factory.mktemp("data"), {
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin;User:ANONYMOUS",           # the PLAINTEXT listener is the tests' own
        "group.initial.rebalance.delay.ms": "0"}).start()
    yield broker
    broker.stop()


def settings(broker, user: str) -> dict:
    return {"bootstrap.servers": broker.bootstrap_for("SASL_PLAINTEXT"), "security.protocol": "sasl_plaintext",
            "sasl.mechanism": "PLAIN", "sasl.username": user, "sasl.password": USERS[user]}


def admin(broker):
    from confluent_kafka.admin import AdminClient
    return AdminClient(settings(broker, "admin"))


def acl(resource: str, name: str, user: str, operation: str, pattern: str = "LITERAL", permission: str = "ALLOW"):
    from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, ResourcePatternType,
                                       ResourceType)
    return AclBinding(ResourceType[resource], name, ResourcePatternType[pattern], f"User:{user}", "*",
                      AclOperation[operation], AclPermissionType[permission])


def grant(broker, *bindings) -> None:
    client = admin(broker)              # kept alive until its answers are in
    for future in client.create_acls(list(bindings)).values():
        future.result(10)


def produce(broker, topic: str, count: int = 3) -> None:
    import confluent_kafka
    producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap_for("PLAINTEXT")})
    for i in range(count):
        producer.produce(topic, f"m{i}".encode())
    assert producer.flush(10) == 0


def test_admin_clients_create_describe_and_delete_acls(authorized):
    from confluent_kafka.admin import AclBindingFilter, AclOperation, AclPermissionType, ResourcePatternType, ResourceType
    client = admin(authorized)
    topic = f"t-{uuid.uuid4().hex[:6]}"
    grant(authorized, acl("TOPIC", topic, "bob", "READ"), acl("TOPIC", topic[:3], "bob", "WRITE", "PREFIXED"))
    everything_of_bob = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, "User:bob", None,
                                         AclOperation.ANY, AclPermissionType.ANY)
    found = client.describe_acls(everything_of_bob).result(10)
    assert {(b.name, b.operation.name, b.resource_pattern_type.name) for b in found} >= {
        (topic, "READ", "LITERAL"), (topic[:3], "WRITE", "PREFIXED")}
    # MATCH: every ACL that applies to the topic's name, literal and prefixed
    matching = AclBindingFilter(ResourceType.TOPIC, topic, ResourcePatternType.MATCH, None, None,
                                AclOperation.ANY, AclPermissionType.ANY)
    assert len(client.describe_acls(matching).result(10)) == 2
    [deleted] = client.delete_acls([matching]).values()
    assert len(deleted.result(10)) == 2
    assert client.describe_acls(matching).result(10) == []
    # a user without ALTER on the cluster may not change them
    from confluent_kafka.admin import AdminClient
    from confluent_kafka import KafkaException
    bob = AdminClient(settings(authorized, "bob"))
    with pytest.raises(KafkaException, match="CLUSTER_AUTHORIZATION_FAILED"):
        list(bob.create_acls([acl("TOPIC", "x", "bob", "READ")]).values())[0].result(10)


def test_without_read_on_the_group_a_member_is_refused_until_the_acl_is_granted(authorized):
    import confluent_kafka
    topic, group = f"orders-{uuid.uuid4().hex[:6]}", f"billing-{uuid.uuid4().hex[:6]}"
    produce(authorized, topic)
    grant(authorized, acl("TOPIC", topic, "alice", "READ"))
    errors = []
    consumer = confluent_kafka.Consumer({**settings(authorized, "alice"), "group.id": group,
                                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                                         "error_cb": errors.append})
    consumer.subscribe([topic])
    values, refused, deadline = [], None, time.monotonic() + 10
    while refused is None and time.monotonic() < deadline:
        message = consumer.poll(0.2)
        if message is not None and message.error() is not None:
            refused = message.error()
    refused = refused or (errors[0] if errors else None)
    assert refused is not None and refused.code() == confluent_kafka.KafkaError.GROUP_AUTHORIZATION_FAILED
    grant(authorized, acl("GROUP", group, "alice", "READ"))      # at runtime: the same client goes on
    deadline = time.monotonic() + 15
    while len(values) < 3 and time.monotonic() < deadline:
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            values.append(message.value())
    consumer.commit(asynchronous=False)
    consumer.close()
    assert values == [b"m0", b"m1", b"m2"]


def test_kafka_python_gets_group_authorization_failed_then_proceeds(authorized):
    from kafka import KafkaConsumer
    from kafka.errors import GroupAuthorizationFailedError
    topic, group = f"events-{uuid.uuid4().hex[:6]}", f"audit-{uuid.uuid4().hex[:6]}"
    produce(authorized, topic)
    grant(authorized, acl("TOPIC", topic, "alice", "READ"))
    consumer = KafkaConsumer(topic, group_id=group, bootstrap_servers=authorized.bootstrap_for("SASL_PLAINTEXT"),
                             security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN", sasl_plain_username="alice",
                             sasl_plain_password="alice-secret", auto_offset_reset="earliest", enable_auto_commit=False)
    with pytest.raises(GroupAuthorizationFailedError):
        consumer.poll(timeout_ms=5000)
    grant(authorized, acl("GROUP", group, "alice", "READ"))
    records, deadline = [], time.monotonic() + 15
    while len(records) < 3 and time.monotonic() < deadline:
        for batch in consumer.poll(timeout_ms=500).values():
            records += [r.value for r in batch]
    consumer.commit()
    consumer.close()
    assert records == [b"m0", b"m1", b"m2"]


def test_a_topic_without_describe_is_invisible_in_metadata(authorized):
    import confluent_kafka
    secret, visible = f"secret-{uuid.uuid4().hex[:6]}", f"visible-{uuid.uuid4().hex[:6]}"
    produce(authorized, secret)
    produce(authorized, visible)
    grant(authorized, acl("TOPIC", visible, "bob", "DESCRIBE"))
    bob = confluent_kafka.admin.AdminClient(settings(authorized, "bob"))
    listed = bob.list_topics(timeout=10).topics
    assert visible in listed and secret not in listed
    named = bob.list_topics(secret, timeout=10).topics[secret]
    assert named.error is not None and named.error.code() == confluent_kafka.KafkaError.TOPIC_AUTHORIZATION_FAILED
    grant(authorized, acl("TOPIC", secret, "bob", "DESCRIBE"))
    assert secret in bob.list_topics(timeout=10).topics


def test_described_groups_carry_the_principals_authorized_operations(authorized):
    from confluent_kafka.admin import AclOperation
    import confluent_kafka
    group = f"ops-{uuid.uuid4().hex[:6]}"
    grant(authorized, acl("GROUP", group, "bob", "DESCRIBE"), acl("GROUP", group, "bob", "DELETE"))
    bob = confluent_kafka.admin.AdminClient(settings(authorized, "bob"))
    [future] = bob.describe_consumer_groups([group], include_authorized_operations=True).values()
    described = future.result(10)
    assert set(described.authorized_operations) == {AclOperation.DESCRIBE, AclOperation.DELETE}


def test_acls_survive_a_crash(tmp_path):
    props = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
             "super.users": "User:ANONYMOUS"}
    broker = EmbeddedBroker(tmp_path, props).start()
    try:
        from confluent_kafka.admin import AdminClient
        client = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        for future in client.create_acls([acl("GROUP", "kept", "carol", "READ")]).values():
            future.result(10)
        broker.restart(crash=True)
        from confluent_kafka.admin import AclBindingFilter, AclOperation, AclPermissionType, ResourcePatternType, ResourceType
        client = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        found = client.describe_acls(AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                                                      AclOperation.ANY, AclPermissionType.ANY)).result(10)
        assert [(b.name, b.principal, b.operation.name) for b in found] == [("kept", "User:carol", "READ")]
    finally:
        broker.stop()
