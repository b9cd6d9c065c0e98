"""MEMBER_ID_REQUIRED: the first JoinGroup of a new dynamic member (JoinGroup v4+, KIP-394).

Since JoinGroup v4 a dynamic member (no group.instance.id) joining with an empty member id is
not added to the group: the coordinator answers MEMBER_ID_REQUIRED with a member id it
generated, and the member must join again with that id. Clients do this silently, so the
recipe shows it twice: through kafka-python's own log while a real KafkaConsumer joins, and
with the two raw JoinGroup v5 requests (groupbroker's own client over a plain socket).
"""

import re

from recipe import (ClientLog, NotReproduced, client, connect, coordinator, make_topic, result, run,
                    settle, unique)

from protocol import REQUESTS
from protocol.api_keys import ApiKey

MEMBER_ID_REQUIRED = 79
ERROR_NAMES = {0: "NONE", MEMBER_ID_REQUIRED: "MEMBER_ID_REQUIRED"}


def recipe(broker) -> None:
    from kafka import KafkaConsumer

    logs = ClientLog()
    topic = unique("clicks")
    make_topic(broker.bootstrap, topic, partitions=1)

    group = unique("kip394-client")
    consumer = KafkaConsumer(client_id="C", bootstrap_servers=broker.bootstrap, group_id=group,
                             enable_auto_commit=False)
    try:
        consumer.partitions_for_topic(topic)
        consumer.subscribe([topic])
        joined = settle(consumer)
    finally:
        consumer.close()
    answers = logs.find(r"Received JoinGroup response: .*error_code=79", "C")
    retried = logs.find(r"Received member id .* will retry join-group", "C")
    if joined is None or not answers or not retried:
        raise NotReproduced("kafka-python's first JoinGroup was not answered MEMBER_ID_REQUIRED")
    client("kafka-python's log while KafkaConsumer C joined:")
    client(f"  {answers[0][:230]}")
    client(f"  {retried[0]}")
    client(f"C then joined generation {joined.generation_id} as {joined.member_id}")
    broker.show(group, "MEMBER_ID_REQUIRED",
                expect=rf"group {re.escape(group)}: .* answered MEMBER_ID_REQUIRED")

    group = unique("kip394-wire")
    first, second = _two_step_join(coordinator(broker.bootstrap, group), group, topic)
    client("the same two steps as raw JoinGroup v5 requests:")
    client(f"  JoinGroup(member_id='') -> error {first.error_code} "
           f"({ERROR_NAMES.get(first.error_code, '?')}), generation {first.generation_id}, "
           f"member_id {first.member_id!r}")
    client(f"  JoinGroup(member_id={first.member_id!r}) -> error {second.error_code} "
           f"({ERROR_NAMES.get(second.error_code, '?')}), generation {second.generation_id}, "
           f"leader {second.leader!r}")
    if first.error_code != MEMBER_ID_REQUIRED or not first.member_id:
        raise NotReproduced(f"the first raw JoinGroup was answered {first.error_code}, not 79")
    if second.error_code != 0 or second.member_id != first.member_id:
        raise NotReproduced(f"the second raw JoinGroup was answered {second.error_code}")
    result("MEMBER_ID_REQUIRED",
           f"the first JoinGroup got generation {first.generation_id} and a member id; the retry "
           f"with that id joined generation {second.generation_id}",
           "KIP-394: the coordinator only admits dynamic members that know their id, so a client "
           "that times out and retries a JoinGroup cannot leave duplicate members behind (each "
           "retry reuses the id). The pending id must rejoin within the session timeout.",
           "none needed: every current client (kafka-python, librdkafka, Java, aiokafka) rejoins "
           "at once. It only matters for hand-written protocol code, for JoinGroup v0-3 clients "
           "(added at once, no id round trip), and for static members (group.instance.id), which "
           "skip this step.")


def _two_step_join(address: str, group: str, topic: str):
    """Join with member_id "" then with the id handed back; leave again. Both responses."""
    from kafka.coordinator.assignors.range import RangePartitionAssignor

    join_cls, leave_cls = REQUESTS[ApiKey.JOIN_GROUP].cls, REQUESTS[ApiKey.LEAVE_GROUP].cls

    def join(member_id: str):
        protocol = join_cls.JoinGroupRequestProtocol(
            name="range", metadata=RangePartitionAssignor.metadata([topic]).encode())
        return client.call(ApiKey.JOIN_GROUP, 5, join_cls(
            group_id=group, session_timeout_ms=6000, rebalance_timeout_ms=6000, member_id=member_id,
            group_instance_id=None, protocol_type="consumer", protocols=(protocol,)))

    client = connect(address, client_id="raw")
    try:
        first = join("")
        second = join(first.member_id) if first.member_id else first
        if second.error_code == 0:
            client.call(ApiKey.LEAVE_GROUP, 3, leave_cls(group_id=group, members=(
                leave_cls.MemberIdentity(member_id=second.member_id, group_instance_id=None),)))
    finally:
        client.close()
    return first, second


if __name__ == "__main__":
    run(recipe, __doc__.splitlines()[0])
