"""``groupbroker groups`` run as a subprocess against an in-process broker with a real group."""

from __future__ import annotations

import dataclasses
import socket
import subprocess
import sys

import pytest
import trio
from kafka.record.default_records import DefaultRecordBatchBuilder

from broker.dispatch.api_versions import unsupported_version_answer
from kafka_client.admin import Connection, GroupsError
from protocol import REQUESTS
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.frames import FrameBuffer
from protocol.header import decode_request_header, encode_response
from protocol.messages import DATA, RESPONSES
from protocol.payloads import encode_payload
from tests.support.trio_client import TrioClient
from tests.support.consumer_wire import Member as ConsumerMember, create_topic
from tests.support.wire import join_stable_member

GROUP, TOPIC, CLIENT = "billing", "orders", "cli-test"


@pytest.fixture
async def broker(serve_broker):
    # consumer groups compute each new target at once (Kafka 4.3 batches them by 1 s by default)
    return await serve_broker({"group.initial.rebalance.delay.ms": "0",
                               "group.min.session.timeout.ms": "500",
                               "group.consumer.assignment.interval.ms": "0"})


async def cli(broker, *args) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "broker", "groups", "--bootstrap-server",
           f"127.0.0.1:{broker.port}", *args]
    return await trio.run_process(cmd, capture_stdout=True, capture_stderr=True, check=False)


def out(result) -> list[str]:
    return result.stdout.decode().splitlines()


def err(result) -> str:
    return result.stderr.decode().strip()


def batch(count: int) -> bytes:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                        batch_size=1 << 20)
    for i in range(count):
        builder.append(i, timestamp=1_000 + i, key=None, value=b"m%d" % i, headers=[])
    return bytes(builder.build())


async def topic_with_records(client: TrioClient) -> None:
    """TOPIC with 2 partitions holding 5 and 3 records."""
    ct = REQUESTS[ApiKey.CREATE_TOPICS].cls
    created = await client.call(ApiKey.CREATE_TOPICS, 5, ct(topics=(ct.CreatableTopic(
        name=TOPIC, num_partitions=2, replication_factor=1, assignments=(), configs=()),)))
    assert created.topics[0].error_code == ErrorCode.NONE
    pr = REQUESTS[ApiKey.PRODUCE].cls
    data = tuple(pr.TopicProduceData.PartitionProduceData(index=p, records=batch(n)) for p, n in ((0, 5), (1, 3)))
    produced = await client.call(ApiKey.PRODUCE, 3, pr(acks=-1, timeout_ms=5000, topic_data=(
        pr.TopicProduceData(name=TOPIC, partition_data=data),)))
    assert all(p.error_code == 0 for p in produced.responses[0].partition_responses)


async def join_with_assignment(client: TrioClient) -> tuple[str, int]:
    """One consumer-protocol member, assigned TOPIC partition 0 only; (member id, generation)."""
    jg, sg = REQUESTS[ApiKey.JOIN_GROUP].cls, REQUESTS[ApiKey.SYNC_GROUP].cls
    subscription = encode_payload(DATA["ConsumerProtocolSubscription"], 0,
                                  DATA["ConsumerProtocolSubscription"].cls(topics=(TOPIC,)))
    join = jg(group_id=GROUP, session_timeout_ms=30_000, rebalance_timeout_ms=30_000, member_id="",
              protocol_type="consumer",
              protocols=(jg.JoinGroupRequestProtocol(name="range", metadata=subscription),))
    first = await client.call(ApiKey.JOIN_GROUP, 5, join)
    joined = await client.call(ApiKey.JOIN_GROUP, 5, dataclasses.replace(join, member_id=first.member_id))
    assert joined.error_code == ErrorCode.NONE
    asg = DATA["ConsumerProtocolAssignment"]
    assignment = encode_payload(asg, 0, asg.cls(assigned_partitions=(
        asg.cls.TopicPartition(topic=TOPIC, partitions=(0,)),)))
    synced = await client.call(ApiKey.SYNC_GROUP, 3, sg(group_id=GROUP, generation_id=joined.generation_id,
                                         member_id=joined.member_id, assignments=(
        sg.SyncGroupRequestAssignment(member_id=joined.member_id, assignment=assignment),)))
    assert synced.error_code == ErrorCode.NONE
    return joined.member_id, joined.generation_id


async def commit(client: TrioClient, member: str, generation: int, offsets: dict[int, int]) -> None:
    oc = REQUESTS[ApiKey.OFFSET_COMMIT].cls
    parts = tuple(oc.OffsetCommitRequestTopic.OffsetCommitRequestPartition(partition_index=p, committed_offset=o,
                                                  committed_metadata="") for p, o in offsets.items())
    answer = await client.call(ApiKey.OFFSET_COMMIT, 2, oc(group_id=GROUP, generation_id_or_member_epoch=generation,
                                        member_id=member, topics=(
        oc.OffsetCommitRequestTopic(name=TOPIC, partitions=parts),)))
    assert all(p.error_code == 0 for p in answer.topics[0].partitions)


@pytest.fixture
async def stable_group(broker):
    """(client, member id): GROUP Stable with one member on partition 0; offsets 2 and 1 committed."""
    client = await TrioClient.connect(broker.port, client_id=CLIENT)
    await topic_with_records(client)
    member, generation = await join_with_assignment(client)
    await commit(client, member, generation, {0: 2, 1: 1})
    yield client, member
    await client.aclose()


async def leave(client: TrioClient, member: str) -> None:
    lg = REQUESTS[ApiKey.LEAVE_GROUP].cls
    answer = await client.call(ApiKey.LEAVE_GROUP, 1, lg(group_id=GROUP, member_id=member))
    assert answer.error_code == ErrorCode.NONE


def row(cells: list, widths: list[int]) -> str:
    return " ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()


def offsets_lines(member: str, current: tuple, host: str = "/127.0.0.1") -> list[str]:
    w = [15, 15, 10, 15, 15, 15, max(15, len(member)), 15, 0]
    owner = [member, host, CLIENT] if member != "-" else ["-", "-", "-"]
    return [row(["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                 "CONSUMER-ID", "HOST", "CLIENT-ID"], w),
            row([GROUP, TOPIC, 0, current[0], 5, 5 - current[0], *owner], w),
            row([GROUP, TOPIC, 1, current[1], 3, 3 - current[1], "-", "-", "-"], w)]


async def test_list_and_describe_a_stable_group(broker, stable_group):
    _, member = stable_group
    listed = await cli(broker, "list")
    assert (listed.returncode, out(listed)) == (0, [GROUP])
    with_state = await cli(broker, "list", "--state")
    assert out(with_state) == [f"{'GROUP':<15} STATE", f"{GROUP:<15} Stable"]
    assert out(await cli(broker, "list", "--state", "stable")) == out(with_state)
    assert out(await cli(broker, "list", "--state", "Empty")) == [f"{'GROUP':<15} STATE"]

    described = await cli(broker, "describe", GROUP)
    assert (described.returncode, err(described)) == (0, "")
    assert out(described) == offsets_lines(member, (2, 1))

    members = await cli(broker, "describe", GROUP, "--members")
    w = [15, max(15, len(member)), 15, 15, 0]
    assert out(members) == [row(["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"], w),
                            row([GROUP, member, "/127.0.0.1", CLIENT, 1], w)]

    state = await cli(broker, "describe", GROUP, "--state")
    coordinator = f"127.0.0.1:{broker.port}  ({broker.config.node_id})"
    w = [15, max(25, len(coordinator)), 25, 20, 0]
    assert out(state) == [row(["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE",
                               "#MEMBERS"], w), row([GROUP, coordinator, "range", "Stable", 1], w)]


async def test_unknown_group_and_unreachable_broker(broker):
    missing = await cli(broker, "describe", "nope")
    assert missing.returncode == 1 and out(missing) == []
    assert err(missing) == "Error: Consumer group 'nope' does not exist."
    assert err(await cli(broker, "describe", "nope", "--state")) == err(missing)
    with trio.socket.socket() as s:        # a port nobody listens on
        await s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    down = await trio.run_process([sys.executable, "-m", "broker", "groups", "--bootstrap-server",
                                   f"127.0.0.1:{port}", "list"],
                                  capture_stdout=True, capture_stderr=True, check=False)
    assert down.returncode == 1
    assert err(down) == f"Error: cannot connect to 127.0.0.1:{port}: Connection refused"


async def test_delete_refused_while_active_then_done_when_empty(broker, stable_group):
    client, member = stable_group
    refused = await cli(broker, "delete", GROUP)
    assert refused.returncode == 1 and out(refused) == []
    assert err(refused).splitlines() == ["Error: Deletion of some consumer groups failed:",
                                         f"* Group '{GROUP}' could not be deleted due to: NON_EMPTY_GROUP"]
    await leave(client, member)
    deleted = await cli(broker, "delete", GROUP)
    assert deleted.returncode == 0, err(deleted)
    assert out(deleted) == [f"Deletion of requested consumer groups ('{GROUP}') was successful."]
    assert out(await cli(broker, "list")) == []


async def test_reset_offsets_refused_while_stable_then_applied(broker, stable_group):
    client, member = stable_group
    refused = await cli(broker, "reset-offsets", GROUP, "--topic", TOPIC, "--to-earliest")
    assert refused.returncode == 1 and out(refused) == []
    assert err(refused) == (f"Error: Assignments can only be reset if the group '{GROUP}' is "
                            "inactive, but the current state is Stable.")
    await leave(client, member)

    w = [30, 30, 10, 0]
    header = row(["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"], w)
    before = out(await cli(broker, "describe", GROUP))
    planned = await cli(broker, "reset-offsets", GROUP, "--topic", TOPIC, "--to-offset", "1")
    assert out(planned) == [header, row([GROUP, TOPIC, 0, 1], w), row([GROUP, TOPIC, 1, 1], w)]
    assert err(planned).startswith("WARN: No action will be performed as the --execute option is missing")
    dry = await cli(broker, "reset-offsets", GROUP, "--topic", TOPIC, "--to-offset", "2", "--dry-run")
    assert out(dry)[1:] == [row([GROUP, TOPIC, 0, 2], w), row([GROUP, TOPIC, 1, 2], w)] and err(dry) == ""
    assert out(await cli(broker, "describe", GROUP)) == before            # neither committed anything
    latest = await cli(broker, "reset-offsets", GROUP, "--topic", TOPIC, "--to-latest", "--execute")
    assert out(latest) == [header, row([GROUP, TOPIC, 0, 5], w), row([GROUP, TOPIC, 1, 3], w)]
    to_offset = await cli(broker, "reset-offsets", GROUP, "--topic", TOPIC, "--to-offset", "4", "--execute")
    assert out(to_offset) == [header, row([GROUP, TOPIC, 0, 4], w), row([GROUP, TOPIC, 1, 3], w)]

    described = await cli(broker, "describe", GROUP)
    assert described.returncode == 0
    assert err(described) == f"Consumer group '{GROUP}' has no active members."
    assert out(described) == offsets_lines("-", (4, 3))
    earliest = await cli(broker, "reset-offsets", GROUP, "--topic", TOPIC, "--to-earliest", "--execute")
    assert out(earliest)[1:] == [row([GROUP, TOPIC, 0, 0], w), row([GROUP, TOPIC, 1, 0], w)]
    assert out(await cli(broker, "describe", GROUP))[1:] == offsets_lines("-", (0, 0))[1:]


# ============================================================================ consumer groups (KIP-848)
# Members driven with ConsumerGroupHeartbeat v1 (member ids of our choosing); the CLI describes
# them with ConsumerGroupDescribe and lists them with ListGroups v5, in Kafka 4.x's columns.

CG, EVENTS = "kip848", "events"


def parts(assignment: dict) -> list[int]:
    return sorted(p for ps in assignment.values() for p in ps)


def java_lines(widths: list[int], rows: list[list]) -> list[str]:
    """Kafka's table: a blank line, then every row with every column padded (%-Ns)."""
    return ["", *(" ".join(str(c).ljust(w) for c, w in zip(r, widths)) for r in rows)]


async def test_list_by_type_and_describe_a_consumer_group_while_it_reconciles(broker):
    client = await TrioClient.connect(broker.port, client_id="cg-cli")
    await create_topic(client, EVENTS, 3)
    await join_stable_member(client, "legacy-app", session_timeout_ms=60_000)     # a classic group
    first = ConsumerMember(client, CG, "member-one", [EVENTS])
    second = ConsumerMember(client, CG, "member-two", [EVENTS], instance="worker-2")
    await first.join()
    assert (first.epoch, parts(first.assigned)) == (2, [0, 1, 2])

    listed = await cli(broker, "--list")
    assert out(listed) == [CG, "legacy-app"]
    typed = await cli(broker, "--list", "--type")
    assert out(typed) == [f"{'GROUP':<25} {'TYPE':<20}", f"{CG:<25} {'Consumer':<20}",
                          f"{'legacy-app':<25} {'Classic':<20}"]
    assert out(await cli(broker, "--list", "--type", "consumer")) == out(typed)[:2]
    assert out(await cli(broker, "--list", "--type", "classic", "--state")) == [
        f"{'GROUP':<25} {'TYPE':<20} {'STATE':<20}", f"{'legacy-app':<25} {'Classic':<20} {'Stable':<20}"]
    legacy = await cli(broker, "list", "--type", "consumer", "--state")
    assert out(legacy) == [row(["GROUP", "TYPE", "STATE"], [15, 20, 0]), row([CG, "Consumer", "Stable"], [15, 20, 0])]
    assert out(await cli(broker, "list", "--type")) == [
        row(["GROUP", "TYPE"], [15, 0]), row([CG, "Consumer"], [15, 0]), row(["legacy-app", "Classic"], [15, 0])]

    # the second member joins while the first is held from revoking: the group reconciles
    await broker.control.execute("hold_revocations", group=CG)
    await second.join()
    await first.beat()                                              # gives one partition up...
    await first.beat()                                              # ...which the hold keeps revoking
    await second.beat()
    kept, moved = parts(first.assigned), sorted({0, 1, 2} - set(parts(first.assigned)))
    assert (bool(kept and moved), first.epoch, second.epoch, second.assigned) == (True, 2, 3, {})
    members = await cli(broker, "--describe", "--group", CG, "--members", "--verbose")
    assert err(members) == f"Consumer group '{CG}' is rebalancing.".join(["Warning: ", ""])
    current, target, held = (f"{EVENTS}:{','.join(map(str, ps))}" for ps in (kept, moved, kept + moved))
    w = [15, 15, 17, 15, 15, 15, 15, 20, 15, 20]
    assert out(members) == java_lines(w, [
        ["GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "CURRENT-EPOCH",
         "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"],
        # Kafka 4.3 (KAFKA-20431): a member holds what it revokes until it has revoked it
        [CG, "member-one", "", "/127.0.0.1", "cg-cli", len(kept) + len(moved), 2, held, 3, current],
        [CG, "member-two", "worker-2", "/127.0.0.1", "cg-cli", 0, 3, "-", 3, target]])
    state = await cli(broker, "--describe", "--group", CG, "--state", "--verbose")
    coordinator = f"127.0.0.1:{broker.port}  ({broker.config.node_id})"
    w = [15, max(25, len(coordinator)), 20, 20, 15, 25, 0]
    assert out(state) == java_lines(w, [
        ["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH",
         "#MEMBERS"], [CG, coordinator, "uniform", "Reconciling", 3, 3, 2]])
    refused = await cli(broker, "--reset-offsets", "--group", CG, "--all-topics", "--to-earliest", "--execute")
    assert out(refused)[:2] == ["", f"Error: Assignments can only be reset if the group '{CG}' is inactive, "
                                    "but the current state is Reconciling."]

    # released: the partition moves, the group is Stable at epoch 3
    await broker.control.execute("release_revocations", group=CG)
    await first.beat()
    await second.beat()
    assert (first.epoch, parts(second.assigned)) == (3, moved)
    state = await cli(broker, "describe", CG, "--state", "--verbose")          # the older layout
    w = [15, max(25, len(coordinator)), 25, 20, 15, 25, 0]
    assert (err(state), out(state)) == ("", [
        row(["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "GROUP-EPOCH",
             "TARGET-ASSIGNMENT-EPOCH", "#MEMBERS"], w), row([CG, coordinator, "uniform", "Stable", 3, 3, 2], w)])
    members = await cli(broker, "--describe", "--group", CG, "--members")
    w = [15, 15, 17, 15, 15, 15]
    assert (err(members), members.stdout.decode()) == ("", "".join(f"\n{' '.join(str(c).ljust(x) for c, x in zip(r, w))} "
                                                               for r in [
        ["GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS"],
        [CG, "member-one", "", "/127.0.0.1", "cg-cli", len(kept)],
        [CG, "member-two", "worker-2", "/127.0.0.1", "cg-cli", len(moved)]]) + "\n")
    offsets = await cli(broker, "--describe", "--group", CG)
    w = [15, 15, 10, 15, 15, 15, 15, 15, 0]
    assert out(offsets) == java_lines(w, [
        ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST",
         "CLIENT-ID"],
        *([CG, EVENTS, p, "-", 0, "-", member, "/127.0.0.1", "cg-cli"]      # the larger assignment first
          for member, ps in sorted([("member-one", kept), ("member-two", moved)], key=lambda m: -len(m[1]))
          for p in ps)])
    verbose = await cli(broker, "describe", CG, "--members", "--verbose")      # the older layout
    assert out(verbose)[1].split() == [CG, "member-one", "/127.0.0.1", "cg-cli", str(len(kept)), "3", current,
                                       "3", current]


def fake_old_broker(listener, seen: list[int]) -> None:
    """Answers ApiVersions like a broker that knows only v0-2 (and ListGroups v0-1)."""
    answer = RESPONSES[ApiKey.API_VERSIONS].cls
    conn, _ = listener.accept()
    frames = FrameBuffer()
    with conn:
        for _ in range(2):
            while (frame := frames.next_frame()) is None:
                frames.feed(conn.recv(1 << 16))
            header, _ = decode_request_header(frame)
            seen.append(header.api_version)
            if header.api_version > 2:
                v0 = dataclasses.replace(unsupported_version_answer(), api_keys=(
                    answer.ApiVersion(api_key=18, min_version=0, max_version=2),))
                conn.sendall(encode_response(18, 0, header.correlation_id, v0))
            else:
                conn.sendall(encode_response(18, 2, header.correlation_id, answer(
                    error_code=0, api_keys=(answer.ApiVersion(api_key=18, min_version=0, max_version=2),
                                            answer.ApiVersion(api_key=16, min_version=0, max_version=1)))))


async def test_api_versions_falls_back_to_the_brokers_version():
    listener = socket.create_server(("127.0.0.1", 0))
    seen: list[int] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(trio.to_thread.run_sync, fake_old_broker, listener, seen)
        conn = await trio.to_thread.run_sync(Connection, "127.0.0.1", listener.getsockname()[1])
    listener.close()
    conn.close()
    assert seen == [REQUESTS[ApiKey.API_VERSIONS].max_version, 2]
    assert conn.versions == {18: 2, 16: 1}
    with pytest.raises(GroupsError, match="shares no version of DescribeGroupsRequest"):
        conn.version(15)


# ============================================================================ Kafka's own syntax
# kafka-consumer-groups.sh command lines (Kafka's docs/ops.html "Managing Consumer Groups", and
# the checks of ConsumerGroupCommandOptions) against a `groupbroker serve` process, with groups
# made by kafka-python 3.0.12 consumers. Expected text is Java's %-Ns layout: every table starts
# with a blank line; widths are those of Kafka 4.x's ConsumerGroupCommand.

T0 = 1_704_067_200_000                      # 2024-01-01T00:00:00Z; record i is T0 + i minutes


@pytest.fixture
def served(start_broker):
    return start_broker({"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 1000})


def kcg(served, *args: str, bootstrap: bool = True) -> subprocess.CompletedProcess:
    """kafka-consumer-groups.sh's command line, run as `groupbroker groups`."""
    cmd = [sys.executable, "-m", "broker", "groups",
           *(["--bootstrap-server", served.bootstrap] if bootstrap else []), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)


def java(widths: list[int], cells: list) -> str:
    """One line of Java's String.format with %-{w}s columns (w 0: %s) joined by spaces."""
    return " ".join(str(c).ljust(w) for c, w in zip(cells, widths))


def orders_topic(bootstrap: str, topic: str = "orders", partitions: int = 3, per_partition: int = 4) -> None:
    """``topic`` with ``per_partition`` records in each partition, record i stamped T0 + i min,
    each in its own batch (the broker answers ListOffsets by timestamp per batch)."""
    from kafka import KafkaAdminClient, KafkaProducer
    from kafka.admin import NewTopic
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, partitions, 1)])
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        for p in range(partitions):
            for i in range(per_partition):
                producer.send(topic, value=b"v%d" % i, partition=p, timestamp_ms=T0 + i * 60_000)
                producer.flush(30)
    finally:
        producer.close()


def member(bootstrap: str, group: str, client_id: str, topic: str = "orders",
           commits: dict[int, int] | None = None):
    """A kafka-python consumer in ``group`` owning every partition of ``topic``, having
    committed ``commits`` (partition -> offset); the caller closes it (LeaveGroup)."""
    from kafka import KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata
    from tests.support.processes import wait_until
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, client_id=client_id,
                             enable_auto_commit=False, session_timeout_ms=6000,
                             heartbeat_interval_ms=500, auto_offset_reset="earliest")
    consumer.subscribe([topic])
    # 500 ms polls: kafka-python 3.0.12 can lose its join between two much shorter ones
    wait_until(lambda: consumer.poll(timeout_ms=500) is not None and consumer.assignment(), 30,
               f"{client_id}'s assignment")
    if commits:
        consumer.commit({TopicPartition(topic, p): OffsetAndMetadata(o, "", -1) for p, o in commits.items()})
    return consumer


def member_id(served, group: str) -> str:
    from kafka_client.admin import Cluster, Connection, describe_group, find_coordinator, parse_address
    cluster = Cluster(Connection(*parse_address(served.bootstrap)))
    try:
        _, host, port = find_coordinator(cluster, group)
        return describe_group(cluster.connection(host, port), group).members[0].member_id
    finally:
        cluster.close()


OFFSETS_HEADER = ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                  "CONSUMER-ID", "HOST", "CLIENT-ID"]
RESET_WIDTHS = [30, 30, 10, 15]


def plan(group: str, rows: list[tuple[str, int, int]]) -> str:
    return "".join("\n" + java(RESET_WIDTHS, r) for r in [("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"),
                                                         *((group, *r) for r in rows)]) + "\n"


def test_the_command_lines_of_kafkas_docs(served):
    """docs/ops.html, Managing Consumer Groups: each command line, Kafka 4.x's columns."""
    orders_topic(served.bootstrap)
    consumer = member(served.bootstrap, "my-group", "consumer1", commits={0: 1, 1: 2, 2: 4})
    try:
        mid = member_id(served, "my-group")
        listed = kcg(served, "--list")
        assert (listed.returncode, listed.stdout, listed.stderr) == (0, "my-group\n", "")

        described = kcg(served, "--describe", "--group", "my-group")
        w = [15, 15, 10, 15, 15, 15, len(mid), 15, 0]
        assert (described.returncode, described.stderr) == (0, "")
        assert described.stdout == "".join("\n" + java(w, r) for r in [
            OFFSETS_HEADER, *(["my-group", "orders", p, c, 4, 4 - c, mid, "/127.0.0.1", "consumer1"]
                              for p, c in ((0, 1), (1, 2), (2, 4)))]) + "\n"
        assert kcg(served, "--describe", "--group", "my-group", "--offsets").stdout == described.stdout

        verbose = kcg(served, "--describe", "--group", "my-group", "--offsets", "--verbose")
        w = [15, 15, 10, 15, 15, 15, 15, len(mid), 15, 0]
        assert verbose.stdout.splitlines()[1] == java(w, OFFSETS_HEADER[:3] + ["LEADER-EPOCH"] + OFFSETS_HEADER[3:])
        assert verbose.stdout.splitlines()[2] == java(w, ["my-group", "orders", 0, "-", 1, 4, 3, mid,
                                                          "/127.0.0.1", "consumer1"])

        members = kcg(served, "--describe", "--group", "my-group", "--members")
        w = [15, len(mid), 15, 15, 15]
        assert members.stdout == "".join(f"\n{java(w, r)} " for r in [
            ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"],
            ["my-group", mid, "/127.0.0.1", "consumer1", 3]]) + "\n"

        members_verbose = kcg(served, "--describe", "--group", "my-group", "--members", "--verbose")
        w = [15, len(mid), 15, 15, 15, 15, 20, 15, 20]
        assert members_verbose.stdout == "".join("\n" + java(w, r) for r in [
            ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "CURRENT-EPOCH",
             "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"],
            ["my-group", mid, "/127.0.0.1", "consumer1", 3, "-", "orders:0,1,2", "-", "-"]]) + "\n"

        state = kcg(served, "--describe", "--group", "my-group", "--state")
        coordinator = f"{served.bootstrap}  (1)"          # node.id defaults to 1
        w = [15, max(25, len(coordinator)), 20, 20, 0]
        assert state.stdout == "".join("\n" + java(w, r) for r in [
            ["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"],
            ["my-group", coordinator, "range", "Stable", 1]]) + "\n"
        state_verbose = kcg(served, "--describe", "--group", "my-group", "--state", "--verbose")
        w = [15, max(25, len(coordinator)), 20, 20, 15, 25, 0]
        assert state_verbose.stdout.splitlines()[1:] == [
            java(w, ["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "GROUP-EPOCH",
                     "TARGET-ASSIGNMENT-EPOCH", "#MEMBERS"]),
            java(w, ["my-group", coordinator, "range", "Stable", "-", "-", 1])]

        with_state = kcg(served, "--list", "--state")
        assert with_state.stdout == f"{'GROUP':<25} {'STATE':<20}\n{'my-group':<25} {'Stable':<20}\n"
        typed = kcg(served, "--list", "--type", "--state", "stable,empty")
        assert typed.stdout.splitlines() == [f"{'GROUP':<25} {'TYPE':<20} {'STATE':<20}",
                                             f"{'my-group':<25} {'Classic':<20} {'Stable':<20}"]
        assert kcg(served, "--list", "--state", "Empty").stdout == f"{'GROUP':<25} {'STATE':<20}\n"
    finally:
        consumer.close()

    member(served.bootstrap, "my-other-group", "consumer2", commits={0: 1}).close()
    reset = kcg(served, "--reset-offsets", "--group", "my-group", "--topic", "orders", "--to-latest")
    assert reset.returncode == 0
    assert reset.stderr.startswith("WARN: No action will be performed as the --execute option is missing. ")
    assert reset.stdout == plan("my-group", [("orders", 0, 4), ("orders", 1, 4), ("orders", 2, 4)])

    deleted = kcg(served, "--delete", "--group", "my-group", "--group", "my-other-group")
    assert (deleted.returncode, deleted.stderr) == (0, "")
    assert deleted.stdout == "Deletion of requested consumer groups ('my-group', 'my-other-group') was successful.\n"
    assert kcg(served, "--list").stdout == ""


def test_describe_all_groups_one_table_each(served):
    orders_topic(served.bootstrap)
    member(served.bootstrap, "alpha", "a", commits={0: 3, 2: 1}).close()
    consumer = member(served.bootstrap, "beta", "b", commits={1: 2})
    try:
        mid = member_id(served, "beta")
        described = kcg(served, "--describe", "--all-groups")
        assert described.stderr == "\nConsumer group 'alpha' has no active members.\n"
        w = [15, 15, 10, 15, 15, 15, 15, 15, 0]
        alpha = [java(w, r) for r in [OFFSETS_HEADER, ["alpha", "orders", 0, 3, 4, 1, "-", "-", "-"],
                                      ["alpha", "orders", 2, 1, 4, 3, "-", "-", "-"]]]
        w = [15, 15, 10, 15, 15, 15, len(mid), 15, 0]
        beta = [java(w, r) for r in [OFFSETS_HEADER] + [
            ["beta", "orders", p, c, 4, lag, mid, "/127.0.0.1", "b"]
            for p, c, lag in ((0, "-", "-"), (1, 2, 2), (2, "-", "-"))]]
        assert described.stdout.split("\n") == ["", *alpha, "", *beta, ""]

        states = kcg(served, "--describe", "--all-groups", "--state")
        assert [line.split()[-2:] for line in states.stdout.splitlines() if line.startswith(("alpha", "beta"))] \
            == [["Empty", "0"], ["Stable", "1"]]
        assert states.stdout.count("\n\n") == 1          # a blank line before each table
        missing = kcg(served, "--describe", "--group", "alpha", "--group", "nope")
        assert missing.returncode == 0 and missing.stdout == (
            "\nError: Executing consumer group command failed due to "
            "org.apache.kafka.common.errors.GroupIdNotFoundException: Group nope not found.\n")
    finally:
        consumer.close()


def test_reset_offsets_scopes_and_scenarios(served):
    orders_topic(served.bootstrap)
    member(served.bootstrap, "g", "c", commits={0: 1, 1: 2, 2: 3}).close()

    def reset(*args: str) -> str:
        result = kcg(served, "--reset-offsets", "--group", "g", *args)
        assert result.returncode == 0, result.stdout + result.stderr
        return result.stdout

    assert reset("--topic", "orders:0,2", "--to-earliest", "--dry-run") == plan("g", [("orders", 0, 0), ("orders", 2, 0)])
    assert reset("--all-topics", "--to-offset", "3", "--dry-run") == plan("g", [("orders", p, 3) for p in range(3)])
    assert reset("--all-topics", "--to-current", "--dry-run") == plan("g", [("orders", 0, 1), ("orders", 1, 2), ("orders", 2, 3)])

    shifted = kcg(served, "--reset-offsets", "--group", "g", "--all-topics", "--shift-by", "-2", "--dry-run")
    assert shifted.stdout == plan("g", [("orders", 0, 0), ("orders", 1, 0), ("orders", 2, 1)])   # 1-2 clamped to 0
    assert "New offset (-1) is lower than earliest offset for topic partition orders-0. Value will be set to 0." in shifted.stderr
    up = kcg(served, "--reset-offsets", "--group", "g", "--topic", "orders:2", "--shift-by", "5", "--dry-run")
    assert up.stdout == plan("g", [("orders", 2, 4)])
    assert "New offset (8) is higher than latest offset for topic partition orders-2. Value will be set to 4." in up.stderr

    at_two_minutes = plan("g", [("orders", p, 2) for p in range(3)])
    assert reset("--topic", "orders", "--to-datetime", "2024-01-01T00:02:00.000", "--dry-run") == at_two_minutes
    assert reset("--topic", "orders", "--to-datetime", "2024-01-01T01:01:30.000+01:00", "--dry-run") == at_two_minutes
    # ten years back: before every record (a hundred would ask for a time before 1970, which
    # Kafka 4 answers UNSUPPORTED_VERSION, as any negative timestamp it does not know)
    assert reset("--topic", "orders", "--by-duration", "P3650D", "--dry-run") == plan("g", [("orders", p, 0) for p in range(3)])
    after_all = reset("--topic", "orders:1", "--by-duration", "PT1M", "--dry-run")  # every record is older
    assert after_all == ("\nWarn: Partition 1 from topic orders is empty. Falling back to latest known offset.\n"
                         + plan("g", [("orders", 1, 4)]))
    bad = kcg(served, "--reset-offsets", "--group", "g", "--all-topics", "--by-duration", "1 day", "--dry-run")
    assert bad.stdout == "\nError: Executing consumer group command failed due to Text cannot be parsed to a Duration\n"

    executed = kcg(served, "--reset-offsets", "--group", "g", "--topic", "orders:0,2", "--to-offset", "3", "--execute")
    assert (executed.stdout, executed.stderr) == (plan("g", [("orders", 0, 3), ("orders", 2, 3)]), "")
    assert [line.split()[1:4] for line in kcg(served, "--describe", "--group", "g").stdout.splitlines()[2:]] == [
        ["orders", "0", "3"], ["orders", "1", "2"], ["orders", "2", "3"]]
    exported = kcg(served, "--reset-offsets", "--group", "g", "--all-topics", "--to-latest", "--dry-run", "--export")
    assert exported.stdout == "orders,0,4\norders,1,4\norders,2,4\n\n"

    consumer = member(served.bootstrap, "g", "c")
    try:
        refused = kcg(served, "--reset-offsets", "--group", "g", "--all-topics", "--to-earliest", "--execute")
        assert refused.returncode == 0
        assert refused.stdout == ("\nError: Assignments can only be reset if the group 'g' is inactive, but the "
                                  "current state is Stable.\n" + plan("g", []))
    finally:
        consumer.close()


def test_delete_offsets_and_delete_failures(served):
    orders_topic(served.bootstrap)
    member(served.bootstrap, "idle", "c", commits={0: 1, 1: 1, 2: 1}).close()
    done = kcg(served, "--delete-offsets", "--group", "idle", "--topic", "orders:0,1", "--topic", "missing")
    assert done.returncode == 0
    w = [15, 10, 15]
    assert done.stdout == "Request succeeded for deleting offsets from group idle.\n" + "".join(
        "\n" + java(w, r) for r in [["TOPIC", "PARTITION", "STATUS"],
                                    ["missing", "-", "Error: org.apache.kafka.common.errors."
                                     "UnknownTopicOrPartitionException: This server does not host this topic-partition."],
                                    ["orders", 0, "Successful"], ["orders", 1, "Successful"]]) + "\n"
    assert [line.split()[2] for line in kcg(served, "--describe", "--group", "idle").stdout.splitlines()[2:]] == ["2"]

    consumer = member(served.bootstrap, "busy", "b", commits={0: 1})
    try:
        subscribed = kcg(served, "--delete-offsets", "--group", "busy", "--topic", "orders:0")
        assert subscribed.stdout.splitlines()[:2] == [
            "", "Error: Encountered some partition-level error, see the follow-up details."]
        assert subscribed.stdout.splitlines()[-1] == java(w, [
            "orders", 0, "Error: org.apache.kafka.common.errors.GroupSubscribedToTopicException: "
            "Deleting offsets of a topic is forbidden while the consumer group is actively subscribed to it."])
        refused = kcg(served, "--delete", "--group", "busy", "--group", "idle")
        assert refused.returncode == 0
        assert refused.stdout == (
            "\nError: Deletion of some consumer groups failed:\n"
            "* Group 'busy' could not be deleted due to: org.apache.kafka.common.errors."
            "GroupNotEmptyException: The group is not empty.\n"
            "\nThese consumer groups were deleted successfully: 'idle'\n")
    finally:
        consumer.close()


NO_BROKER_NEEDED = [
    ([], 'Missing required argument "[bootstrap-server]"', False),
    (["--describe"], "Option [describe] takes one of these options: [group], [all-groups]", True),
    (["--describe", "--group", "g", "--members", "--state"],
     "Option [describe] takes at most one of these options: [members], [offsets], [state]", True),
    (["--describe", "--group", "g", "--state", "stable"], "Option [describe] does not take a value for [state]", True),
    (["--delete", "--group", "g", "--topic", "t"],
     "The consumer does not support topic-specific offset deletion from a consumer group.", True),
    (["--delete-offsets", "--group", "g"], "Option [delete-offsets] takes the following options: [group], [topic]", True),
    (["--reset-offsets", "--group", "g", "--all-topics", "--to-earliest", "--execute", "--dry-run"],
     "Option [reset-offsets] only accepts one of [execute] and [dry-run]", True),
    (["--reset-offsets", "--all-topics", "--to-earliest", "--dry-run"],
     "Option [reset-offsets] takes one of these options: [group], [all-groups]", True),
    (["--reset-offsets", "--group", "g", "--all-topics", "--to-earliest", "--to-latest", "--dry-run"],
     'Option "[to-earliest]" can\'t be used with option "[to-latest]"', True),
    (["--list", "--group", "g"], 'Option "[group]" can\'t be used with option "[list]"', True),
    (["--describe", "--group", "g", "--all-groups"], 'Option "[group]" can\'t be used with option "[all-groups]"', True),
    (["--describe", "--group", "g", "--topic", "t"], 'Option "[topic]" can\'t be used with option "[describe]"', True),
    (["--group", "g"], "Command must include exactly one action: --list, --describe, --delete, "
                       "--reset-offsets, --delete-offsets", True),
    (["--list", "--delete", "--all-groups"], "Command must include exactly one action: --list, --describe, "
                                             "--delete, --reset-offsets, --delete-offsets", True),
    (["--list", "--members"], "Option(s) [members] are unavailable given other options on the command line", True),
    (["--reset-offsets", "--group", "g", "--all-topics", "--to-offset", "ten", "--dry-run"],
     "Cannot parse argument 'ten' of option to-offset", True),
    (["--list", "--frobnicate"], "frobnicate is not a recognized option", True),
]


@pytest.mark.parametrize("args,message,bootstrap", NO_BROKER_NEEDED, ids=[" ".join(a) or "none" for a, _, _ in NO_BROKER_NEEDED])
def test_wrong_combinations_get_kafkas_message_and_exit_1(args, message, bootstrap):
    cmd = [sys.executable, "-m", "broker", "groups", *(["--bootstrap-server", "127.0.0.1:1"] if bootstrap else []),
           *args, *([] if bootstrap else ["--list"])]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
    lines = [line for line in result.stderr.splitlines() if not line.startswith("WARN: ")]
    assert (result.returncode, result.stdout, lines[0]) == (1, "", message)
    assert "--bootstrap-server H:P" in result.stderr              # then the help, as Kafka's tool


def test_usage_errors_found_while_running(served):
    orders_topic(served.bootstrap)
    member(served.bootstrap, "g", "c", commits={0: 1}).close()
    for args, message in [
        (["--reset-offsets", "--group", "g", "--to-earliest", "--dry-run"],
         "One of the reset scopes should be defined: --all-topics, --topic."),
        (["--reset-offsets", "--group", "g", "--topic", "orders:x", "--to-earliest", "--dry-run"],
         "Invalid partition 'x' specified in topic arg 'orders:x''"),
        (["--reset-offsets", "--group", "g", "--topic", "orders", "--shift-by", "1", "--dry-run"],
         "Cannot shift offset for partition orders-1 since there is no current committed offset"),
        (["--list", "--state", "bogus"], "Invalid state list 'bogus'. Valid states are: PreparingRebalance, "
                                         "CompletingRebalance, Stable, Dead, Empty, Assigning, Reconciling"),
        (["--list", "--type", "share"], "Invalid types list 'share'. Valid types are: Classic, Consumer"),
    ]:
        result = kcg(served, *args)
        assert (result.returncode, result.stdout, result.stderr.splitlines()[0]) == (1, "", message), args
    bad_time = kcg(served, "--reset-offsets", "--group", "g", "--all-topics", "--to-datetime", "2024-01-01", "--dry-run")
    assert bad_time.stdout == ("\nError: Executing consumer group command failed due to java.text.ParseException: "
                               "Error parsing timestamp. It does not contain a 'T' according to ISO8601 format\n")
