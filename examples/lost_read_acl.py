"""GROUP_AUTHORIZATION_FAILED: a group member loses its READ ACL on the group mid-run.

The broker enforces ACLs (Kafka's StandardAuthorizer) and authenticates clients with SASL/PLAIN.
An administrator grants the principal ``User:worker`` READ on a topic and on a consumer group;
the worker (kafka-python) joins the group, reads and commits. Then the administrator deletes
the worker's READ ACL on the group with DeleteAcls, as ``kafka-acls --remove`` would. The
worker keeps polling: its next group request (a heartbeat, a commit) is checked against the
ACLs as they are now, the broker answers GROUP_AUTHORIZATION_FAILED and kafka-python raises
GroupAuthorizationFailedError. The broker's authorizer logs the denial.
"""

import re
import time

from recipe import NotReproduced, client, produce, result, run, say, unique, wait_until

USERS = {"admin": "admin-secret", "worker": "worker-secret"}
OVERRIDES = {
    # PLAINTEXT first: the recipe's own tools (as User:ANONYMOUS, a super user here); SASL for the actors
    "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
    "sasl.enabled.mechanisms": "PLAIN",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config":
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        + " ".join(f'user_{name}="{password}"' for name, password in USERS.items()) + ";",
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:admin;User:ANONYMOUS",
}


def recipe(broker) -> None:
    from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType, AdminClient,
                                       ResourcePatternType, ResourceType)
    from kafka import KafkaConsumer
    from kafka.errors import GroupAuthorizationFailedError

    sasl = broker.bootstrap_for("SASL_PLAINTEXT")
    topic, group = unique("payments"), unique("ledger")
    admin = AdminClient({"bootstrap.servers": sasl, "security.protocol": "sasl_plaintext", "sasl.mechanism": "PLAIN",
                         "sasl.username": "admin", "sasl.password": USERS["admin"]})

    def binding(resource, name):
        return AclBinding(resource, name, ResourcePatternType.LITERAL, "User:worker", "*", AclOperation.READ,
                          AclPermissionType.ALLOW)
    for future in admin.create_acls([binding(ResourceType.TOPIC, topic), binding(ResourceType.GROUP, group)]).values():
        future.result(10)
    say(f"admin granted User:worker READ on topic {topic} and on group {group}")
    produce(broker.bootstrap, topic, partitions=1, messages=5)
    worker = KafkaConsumer(topic, group_id=group, client_id="worker", bootstrap_servers=sasl,
                           security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN", sasl_plain_username="worker",
                           sasl_plain_password=USERS["worker"], auto_offset_reset="earliest",
                           enable_auto_commit=False, heartbeat_interval_ms=300, session_timeout_ms=6000)
    try:
        read = wait_until(lambda: sum(len(b) for b in worker.poll(timeout_ms=300).values()), 10)
        if not read:
            raise NotReproduced("the worker never read its records")
        worker.commit()
        client(f"worker joined generation {worker.group_metadata().generation_id}, read {read} records and "
               f"committed")
        revoke = AclBindingFilter(ResourceType.GROUP, group, ResourcePatternType.LITERAL, "User:worker", None,
                                  AclOperation.READ, AclPermissionType.ALLOW)
        [deleted] = admin.delete_acls([revoke]).values()
        say(f"admin deleted {len(deleted.result(10))} ACL: User:worker may no longer READ group {group}")
        produce(broker.bootstrap, topic, partitions=1, messages=5)
        error, deadline = None, time.monotonic() + 10
        while error is None and time.monotonic() < deadline:
            try:
                worker.poll(timeout_ms=300)
                worker.commit()
            except GroupAuthorizationFailedError as e:
                error = e
        if error is None:
            raise NotReproduced("the worker was never refused")
        client(f"worker's next group request failed: {error!r}")
        wait_until(lambda: broker.log(rf"User:worker is Denied operation = READ .*Group:LITERAL:{re.escape(group)}"), 5)
        for line in broker.log(rf"User:worker is Denied operation = READ .*Group:LITERAL:{re.escape(group)}")[:2]:
            print(f"  broker| {line}", flush=True)
        result("GROUP_AUTHORIZATION_FAILED",
               f"User:worker lost READ on group {group} mid-run and its next group request was refused",
               "every group request (JoinGroup, SyncGroup, Heartbeat, OffsetCommit, LeaveGroup) is checked "
               "against the ACLs as they are when it arrives: nothing is cached per connection or per "
               "member, so a revoked ACL takes effect at the member's next heartbeat or commit.",
               "grant READ on the group again (kafka-acls --add --allow-principal User:worker --operation Read "
               "--group ...); the client may then poll() again and rejoins. Treat "
               "GroupAuthorizationFailedError as fatal for the member otherwise: retrying cannot succeed.")
    finally:
        worker.close(autocommit=False)
        del admin                        # before the broker stops: no reconnection noise


if __name__ == "__main__":
    run(recipe, __doc__.splitlines()[0], OVERRIDES)
