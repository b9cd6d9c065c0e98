"""Fault injection over real sockets: request faults, coordinator faults, shard outages,
recording, and the admin endpoint with ``groupbroker faults``."""

import json
import logging
import re
import socket
import subprocess
import sys

import pytest
import trio

from broker.config import BrokerConfig
from broker.faults.rules import FaultError
from broker.server.broker import Broker
from broker.testing.launcher import TEST_DEFAULTS
from coordinator.interventions import InterventionError
from coordinator.routing import shard_for
from offsets_log import tools
from protocol import REQUESTS
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from tests.support.trio_client import TrioClient
from tests.support.consumer_wire import Member, create_topic, describe, group_state, heartbeat as cg_heartbeat
from tests.support.processes import wait_until
from tests.support.wire import join_stable_member
from tests.oracle.steps import batch
from tests.support.share_wire import acquired, share_fetch, share_member
from tests.support.streams_wire import StreamsMember

E = ErrorCode
Heartbeat, FindCoordinator, Produce = REQUESTS[ApiKey.HEARTBEAT].cls, REQUESTS[ApiKey.FIND_COORDINATOR].cls, REQUESTS[ApiKey.PRODUCE].cls


#: consumer groups compute each new target assignment at once (Kafka 4.3 batches them by 1 s):
#: these tests move partitions within a second
NO_BATCHING = {**TEST_DEFAULTS, "group.consumer.assignment.interval.ms": "0",
               "group.streams.assignment.interval.ms": "0", "group.streams.initial.rebalance.delay.ms": "0"}


@pytest.fixture
async def broker(serve_broker):
    return await serve_broker(NO_BATCHING)


async def heartbeat(client, group, member, generation, instance=None):
    hb = Heartbeat(group_id=group, generation_id=generation, member_id=member, group_instance_id=instance)
    return (await client.call(ApiKey.HEARTBEAT, 4, hb)).error_code


async def test_an_error_answers_the_next_n_requests_of_one_group_only(broker):
    client = await TrioClient.connect(broker.port)
    a, b = [(g, *await join_stable_member(client, g)) for g in ("faulty", "other")]
    await broker.control.execute("fail", api="Heartbeat", error="REBALANCE_IN_PROGRESS", count=2,
                                 group="faulty")
    assert [await heartbeat(client, *a) for _ in range(3)] == [E.REBALANCE_IN_PROGRESS, E.REBALANCE_IN_PROGRESS,
                                                              E.NONE]
    assert await heartbeat(client, *b) == E.NONE
    assert await broker.control.execute("rules") == []           # the rule is used up


async def test_a_client_id_filter_and_a_rule_until_cleared(broker):
    ours, theirs = [await TrioClient.connect(broker.port, client_id=c) for c in ("victim", "bystander")]
    group, member, generation = "g", *await join_stable_member(ours, "g")
    await broker.control.execute("fail", api=12, error=int(E.NOT_COORDINATOR), count=None, client_id="victim")
    assert [await heartbeat(ours, group, member, generation) for _ in range(3)] == [E.NOT_COORDINATOR] * 3
    assert await heartbeat(theirs, group, member, generation) == E.NONE
    assert "cleared 1 rule(s)" in await broker.control.execute("clear")
    assert await heartbeat(ours, group, member, generation) == E.NONE


async def test_injected_errors_take_kafkas_whole_request_failure_shapes(broker):
    client = await TrioClient.connect(broker.port)
    await broker.control.execute("fail", api="FindCoordinator", error="COORDINATOR_NOT_AVAILABLE", count=2)
    old = await client.call(ApiKey.FIND_COORDINATOR, 3, FindCoordinator(key="g"))
    assert (old.error_code, old.node_id, old.port) == (E.COORDINATOR_NOT_AVAILABLE, -1, -1)
    new = await client.call(ApiKey.FIND_COORDINATOR, 4, FindCoordinator(coordinator_keys=("g", "h")))
    assert [(c.key, c.error_code) for c in new.coordinators] == [("g", E.COORDINATOR_NOT_AVAILABLE),
                                                                ("h", E.COORDINATOR_NOT_AVAILABLE)]
    await broker.control.execute("fail", api="Produce", error="NOT_LEADER_OR_FOLLOWER")
    topic = Produce.TopicProduceData
    produce = Produce(acks=1, timeout_ms=1000, topic_data=(topic(name="t", partition_data=(
        topic.PartitionProduceData(index=0, records=b""), topic.PartitionProduceData(index=1, records=b""))),))
    answer = await client.call(ApiKey.PRODUCE, 9, produce)
    assert [(p.index, p.error_code, p.base_offset) for p in answer.responses[0].partition_responses] == \
        [(0, E.NOT_LEADER_OR_FOLLOWER, -1), (1, E.NOT_LEADER_OR_FOLLOWER, -1)]


async def test_bad_fault_requests_are_refused_with_the_reason(broker):
    for args, reason in [(dict(api="CreateTopics", error="INVALID_REQUEST"), "cannot be answered"),
                         (dict(api="NoSuchApi", error="INVALID_REQUEST"), "unknown API"),
                         (dict(api="Heartbeat", error="NO_SUCH_ERROR"), "unknown error code"),
                         (dict(api="Heartbeat", error="INVALID_REQUEST", count=0), "count must be")]:
        with pytest.raises(FaultError, match=reason):
            await broker.control.execute("fail", **args)
    with pytest.raises(FaultError, match="unknown operation"):
        await broker.control.execute("explode")
    with pytest.raises(InterventionError, match="does not exist"):
        await broker.control.execute("force_rebalance", group="nobody")
    assert await broker.control.execute("rules") == []


async def test_delay_holds_the_answer_and_the_requests_behind_it(broker):
    client = await TrioClient.connect(broker.port)
    group, member, generation = "slow", *await join_stable_member(client, "slow")
    await broker.control.execute("delay", api="Heartbeat", ms=300)
    started = trio.current_time()
    first = await client.send(ApiKey.HEARTBEAT, 4, Heartbeat(group_id=group, generation_id=generation, member_id=member))
    second = await client.send(ApiKey.API_VERSIONS, 0, REQUESTS[ApiKey.API_VERSIONS].cls())
    assert (await client.receive())[0] == first
    assert (await client.receive())[0] == second
    assert trio.current_time() - started >= 0.3


async def test_drop_closes_only_that_connection_and_logs_why(broker, caplog):
    victim, other = await TrioClient.connect(broker.port), await TrioClient.connect(broker.port)
    group, member, generation = "dropped", *await join_stable_member(victim, "dropped")
    await broker.control.execute("drop", api="Heartbeat", group=group)
    await victim.send(ApiKey.HEARTBEAT, 4, Heartbeat(group_id=group, generation_id=generation, member_id=member))
    with trio.fail_after(5):
        assert await victim.closed_by_peer()
    assert await heartbeat(other, group, member, generation) == E.NONE
    assert any("fault injection" in r.getMessage() and "drop the connection" in r.getMessage()
               for r in caplog.records)


async def test_force_rebalance_and_expire_member_act_like_the_real_causes(broker):
    client = await TrioClient.connect(broker.port)
    group, member, generation = "forced", *await join_stable_member(client, "forced")
    assert "rebalancing" in await broker.control.execute("force_rebalance", group=group)
    assert await heartbeat(client, group, member, generation) == E.REBALANCE_IN_PROGRESS
    rejoined, again = await join_stable_member(client, group)
    assert again == generation + 1
    await broker.control.execute("expire_member", group=group, member=rejoined)
    assert await heartbeat(client, group, rejoined, again) == E.UNKNOWN_MEMBER_ID
    described = await client.call(ApiKey.DESCRIBE_GROUPS, 5, REQUESTS[ApiKey.DESCRIBE_GROUPS].cls(groups=(group,)))
    assert (described.groups[0].group_state, described.groups[0].members) == ("Empty", ())
    with pytest.raises(InterventionError, match="Empty"):
        await broker.control.execute("force_rebalance", group=group)


async def test_a_fenced_static_member_gets_fenced_instance_id(broker, caplog):
    caplog.set_level(logging.INFO, logger="groupbroker.coordinator")
    client = await TrioClient.connect(broker.port)
    group, member, generation = "static", *await join_stable_member(client, "static", instance_id="i-1")
    outcome = await broker.control.execute("fence_instance", group=group, instance="i-1")
    assert f"{member} fenced" in outcome
    assert any(f"static member {member} (instance i-1) replaced by" in r.getMessage() for r in caplog.records)
    assert await heartbeat(client, group, member, generation, instance="i-1") == E.FENCED_INSTANCE_ID
    with pytest.raises(InterventionError, match="no static member"):
        await broker.control.execute("fence_instance", group=group, instance="i-2")


async def test_an_unavailable_shard_loads_then_moves_then_comes_back_without_expiring_anyone(broker):
    client = await TrioClient.connect(broker.port)
    group, member, generation = "outage", *await join_stable_member(client, "outage", session_timeout_ms=500)
    jg = REQUESTS[ApiKey.JOIN_GROUP].cls
    join = jg(group_id=group, session_timeout_ms=500, rebalance_timeout_ms=500, member_id="",
              protocol_type="consumer", protocols=(jg.JoinGroupRequestProtocol(name="range", metadata=b""),))
    assert f"shard {shard_for(group, 50)} is unavailable" in await broker.control.execute(
        "shard_unavailable", group=group)
    assert (await client.call(ApiKey.JOIN_GROUP, 5, join)).error_code == E.COORDINATOR_LOAD_IN_PROGRESS
    assert await heartbeat(client, group, member, generation) == E.NONE     # Kafka's blind answer
    listed = await client.call(ApiKey.LIST_GROUPS, 4, REQUESTS[ApiKey.LIST_GROUPS].cls())
    assert listed.error_code == E.COORDINATOR_LOAD_IN_PROGRESS
    await broker.control.execute("shard_unavailable", group=group, error="NOT_COORDINATOR")
    assert await heartbeat(client, group, member, generation) == E.NOT_COORDINATOR
    listed = await client.call(ApiKey.LIST_GROUPS, 4, REQUESTS[ApiKey.LIST_GROUPS].cls())          # Kafka: that shard lists nothing
    assert (listed.error_code, [g.group_id for g in listed.groups]) == (E.NONE, [])
    await trio.sleep(0.8)                       # longer than the session: no timer runs meanwhile
    await broker.control.execute("shard_available", group=group)
    assert await heartbeat(client, group, member, generation) == E.NONE
    with pytest.raises(FaultError, match="unavailable with one of"):
        await broker.control.execute("shard_unavailable", group=group, error="UNKNOWN_SERVER_ERROR")


async def test_recording_lists_what_was_asked_and_answered(broker):
    client = await TrioClient.connect(broker.port, client_id="recorded-client")
    await broker.control.execute("record")
    group, member, generation = "rec", *await join_stable_member(client, "rec")
    assert await heartbeat(client, group, member, generation + 5) == E.ILLEGAL_GENERATION
    recorded = await broker.control.execute("recorded", clear=True)
    assert [(r["api"], r["error"]) for r in recorded] == [
        ("JoinGroup", "MEMBER_ID_REQUIRED"), ("JoinGroup", "NONE"), ("SyncGroup", "NONE"),
        ("Heartbeat", "ILLEGAL_GENERATION")]
    last = recorded[-1]
    assert (last["client_id"], last["group"], last["member"], last["generation"], last["version"]) == \
        ("recorded-client", group, member, generation + 5, 4)
    assert await broker.control.execute("recorded") == []


# --- consumer groups (KIP-848): members driven with ConsumerGroupHeartbeat v1 -------------------

async def test_consumer_group_force_rebalance_expire_member_and_fence_instance(broker):
    client = await TrioClient.connect(broker.port)
    await create_topic(client, "cg-orders", 2)
    m = Member(client, "cg", "member-one", ["cg-orders"])
    assert ((await m.join()).error_code, m.epoch) == (E.NONE, 2)

    outcome = await broker.control.execute("force_rebalance", group="cg")
    assert outcome == "group cg: group epoch bumped to 3; members reconcile on their next heartbeat"
    answer = await m.beat()                   # the same partitions, at the new epoch
    assert (answer.error_code, answer.member_epoch) == (E.NONE, 3)
    assert await group_state(client, "cg") == ("consumer", "Stable")

    assert await broker.control.execute("expire_member", group="cg", member=m.member_id) == \
        f"member {m.member_id} of group cg expired"
    assert (await m.beat()).error_code == E.UNKNOWN_MEMBER_ID
    assert await group_state(client, "cg") == ("consumer", "Empty")
    with pytest.raises(InterventionError, match="Empty"):
        await broker.control.execute("force_rebalance", group="cg")

    static = Member(client, "cg", "static-one", ["cg-orders"], instance="i-1")
    assert (await static.join()).error_code == E.NONE
    outcome = await broker.control.execute("fence_instance", group="cg", instance="i-1")
    assert outcome.startswith(f"static member i-1 of group cg: {static.member_id} fenced, now ")
    assert (await static.beat()).error_code == E.FENCED_INSTANCE_ID
    successor = Member(client, "cg", outcome.rpartition(" now ")[2], ["cg-orders"], instance="i-1")
    successor.epoch, successor.assigned = static.epoch, static.assigned
    assert (await successor.beat()).error_code == E.NONE         # the new incarnation holds the instance
    with pytest.raises(InterventionError, match="no static member"):
        await broker.control.execute("fence_instance", group="cg", instance="i-2")


async def test_a_fenced_consumer_group_member_gets_fenced_member_epoch_and_rejoins(broker):
    client = await TrioClient.connect(broker.port)
    await create_topic(client, "cg-fenced", 3)
    m = Member(client, "fenced", "member-one", ["cg-fenced"])
    await m.join()
    outcome = await broker.control.execute("fence_member", group="fenced", member=m.member_id)
    assert outcome == (f"member {m.member_id} of group fenced fenced at epoch 2; its next heartbeat "
                       "gets FENCED_MEMBER_EPOCH")
    assert (await m.beat()).error_code == E.FENCED_MEMBER_EPOCH
    assert await group_state(client, "fenced") == ("consumer", "Empty")
    m.epoch, m.assigned = 0, {}
    rejoined = await m.join()                  # the same member id rejoins with epoch 0
    assert (rejoined.error_code, rejoined.member_epoch) == (E.NONE, 4)
    assert sorted(p for ps in m.assigned.values() for p in ps) == [0, 1, 2]

    with pytest.raises(InterventionError, match="has no member 'nobody'"):
        await broker.control.execute("fence_member", group="fenced", member="nobody")
    await join_stable_member(client, "classic")
    for op, args in (("fence_member", {"member": "x"}), ("hold_revocations", {}), ("release_revocations", {})):
        with pytest.raises(InterventionError, match="'classic' is a classic group: this fault applies "
                                                    "to consumer and streams groups"):
            await broker.control.execute(op, group="classic", **args)
    with pytest.raises(InterventionError, match="'nowhere' is not a group"):
        await broker.control.execute("hold_revocations", group="nowhere")


async def test_held_revocations_keep_the_new_owner_waiting_until_released(broker):
    client = await TrioClient.connect(broker.port)
    await create_topic(client, "cg-held", 2)
    first, second = (Member(client, "held", f"member-{n}", ["cg-held"]) for n in ("one", "two"))
    await first.join()
    assert sum(len(ps) for ps in first.assigned.values()) == 2
    assert await broker.control.execute("hold_revocations", group="held") == "group held: revocations held"

    await second.join()                       # epoch 3: one partition must move from first to second
    answer = await first.beat()               # told to revoke one: it gives it up at once
    assert (answer.member_epoch, sum(len(ps) for ps in first.assigned.values())) == (2, 1)
    for _ in range(3):                        # but the coordinator does not take the revocation
        assert (await first.beat()).member_epoch == 2
        assert ((await second.beat()).member_epoch, second.assigned) == (3, {})
    assert await group_state(client, "held") == ("consumer", "Reconciling")

    assert await broker.control.execute("release_revocations", group="held") == \
        "group held: revocations released"
    assert (await first.beat()).member_epoch == 3
    assert ((await second.beat()).member_epoch, sum(len(ps) for ps in second.assigned.values())) == (3, 1)
    assert await group_state(client, "held") == ("consumer", "Stable")

    await broker.control.execute("hold_revocations", group="held")      # clear releases it too
    assert "revocations released: ['held']" in await broker.control.execute("clear")


async def test_recording_keeps_the_member_epochs_of_consumer_group_heartbeats(broker):
    client = await TrioClient.connect(broker.port, client_id="kip848")
    await create_topic(client, "cg-rec", 1)
    await broker.control.execute("record")
    m = Member(client, "rec848", "member-one", ["cg-rec"])
    await m.join()
    await m.beat()
    assert (await cg_heartbeat(client, "rec848", m.member_id, 7)).error_code == E.FENCED_MEMBER_EPOCH
    await cg_heartbeat(client, "rec848", m.member_id, -1)                  # leaves
    recorded = [r for r in await broker.control.execute("recorded", clear=True)
                if r["api"] == "ConsumerGroupHeartbeat"]
    assert [(r["member_epoch"], r["answered_member_epoch"], r["error"]) for r in recorded] == [
        (0, 2, "NONE"), (2, 2, "NONE"), (7, 0, "FENCED_MEMBER_EPOCH"), (-1, -1, "NONE")]
    assert {(r["group"], r["member"], r["generation"], r["version"], r["client_id"]) for r in recorded} == \
        {("rec848", m.member_id, None, 1, "kip848")}


async def test_consumer_group_apis_take_injected_errors(broker):
    client = await TrioClient.connect(broker.port)
    await create_topic(client, "cg-err", 1)
    await broker.control.execute("fail", api="ConsumerGroupHeartbeat", error="COORDINATOR_NOT_AVAILABLE",
                                 group="err848")
    await broker.control.execute("fail", api="ConsumerGroupDescribe", error="NOT_COORDINATOR", group="err848")
    assert (await describe(client, "err848")).error_code == E.NOT_COORDINATOR
    assert (await describe(client, "err848")).error_code == E.GROUP_ID_NOT_FOUND     # the real answer
    m = Member(client, "err848", "member-one", ["cg-err"])
    assert (await m.join()).error_code == E.COORDINATOR_NOT_AVAILABLE
    assert (await m.join()).error_code == E.NONE


def test_the_admin_endpoint_and_the_cli_drive_a_broker_in_another_process(start_broker, tmp_path):
    b = start_broker({**TEST_DEFAULTS, "groupbroker.admin.port": 0})
    admin = re.search(r"admin endpoint listening on (\S+)", b.log_text()).group(1)

    def faults(*args, data_dir=b.data_dir):
        return subprocess.run([sys.executable, "-m", "broker", "faults", "--admin", admin,
                               "--data-dir", str(data_dir), *args], capture_output=True, text=True, timeout=30)

    done = faults("fail", "api=Heartbeat", "error=REBALANCE_IN_PROGRESS", "count=2", "group=g")
    assert done.returncode == 0 and "rule 1: Heartbeat group=g: answer REBALANCE_IN_PROGRESS (next 2)" in done.stdout
    listed = faults("rules")
    assert listed.returncode == 0 and "rule 1" in listed.stdout
    refused = faults("force-rebalance", "group=nobody")
    assert refused.returncode == 1 and "does not exist" in refused.stderr
    assert faults("fail", "api=Heartbeat").returncode == 1                  # error missing
    assert "cleared 1 rule(s)" in faults("clear").stdout
    unreachable = subprocess.run([sys.executable, "-m", "broker", "faults", "--admin", "127.0.0.1:1",
                                  "--data-dir", str(b.data_dir), "rules"], capture_output=True, text=True, timeout=30)
    assert unreachable.returncode == 1 and "cannot reach" in unreachable.stderr


def test_the_cli_fences_a_real_consumer_protocol_member_which_rejoins(start_broker):
    """confluent-kafka with group.protocol=consumer against `groupbroker serve`: the consumer-group
    faults from the shell (positional arguments), and the recorded member epochs."""
    from tests.support.confluent import consumer_protocol_member, create_topics, holding
    b = start_broker({**NO_BATCHING, "groupbroker.admin.port": 0})
    admin = re.search(r"admin endpoint listening on (\S+)", b.log_text()).group(1)

    def faults(*args):
        done = subprocess.run([sys.executable, "-m", "broker", "faults", "--admin", admin,
                               "--data-dir", str(b.data_dir), *args], capture_output=True, text=True, timeout=30)
        return done.returncode, done.stdout.strip(), done.stderr.strip()

    create_topics(b.bootstrap, ("shell-orders", 2))
    consumer = consumer_protocol_member(b.bootstrap, "shell", ["shell-orders"], "shell-consumer", 2)
    try:
        member = consumer.memberid()
        assert faults("record") == (0, "recording on", "")

        code, out, _ = faults("fence-member", "shell", member)
        assert (code, out) == (0, f"member {member} of group shell fenced at epoch 2; its next heartbeat "
                                  "gets FENCED_MEMBER_EPOCH")

        def rejoined():
            consumer.poll(0.1)
            recorded = json.loads(faults("recorded")[1])
            return [(r["member_epoch"], r["answered_member_epoch"], r["error"]) for r in recorded
                    if r["api"] == "ConsumerGroupHeartbeat" and r["member"] == member]
        epochs = wait_until(lambda: (e := rejoined()) and e[-1][1] >= 4 and e, 20, "the member rejoining")
        fenced = epochs.index((2, 0, "FENCED_MEMBER_EPOCH"))
        assert epochs[fenced + 1] == (0, 4, "NONE")        # it rejoined with epoch 0, got epoch 4
        wait_until(holding(consumer, 2), 20, "the assignment back")

        assert faults("force-rebalance", "group=shell")[:2] == (
            0, "group shell: group epoch bumped to 5; members reconcile on their next heartbeat")
        assert faults("hold-revocations", "shell")[:2] == (0, "group shell: revocations held")
        assert faults("release-revocations", "shell")[:2] == (0, "group shell: revocations released")
        code, _, err = faults("fence-member", "shell", "nobody")
        assert code == 1 and "group 'shell' has no member 'nobody'" in err
        code, _, err = faults("fence-member", "shell")
        assert code == 1 and "missing a required argument: 'member'" in err and "fence-member GROUP MEMBER" in err
        code, _, err = faults("hold-revocations", "group=shell", "extra")
        assert code == 1 and "a plain value after key=value arguments" in err
    finally:
        consumer.close()


def test_the_admin_endpoint_refuses_requests_without_its_token(start_broker, tmp_path):
    b = start_broker({**TEST_DEFAULTS, "groupbroker.admin.port": 0})
    host, port = re.search(r"admin endpoint listening on (\S+):(\d+)", b.log_text()).groups()
    token_file = b.data_dir / "admin.token"
    assert token_file.stat().st_mode & 0o777 == 0o600               # readable by the broker's user only
    for request in ({"op": "rules", "args": {}}, {"op": "rules", "args": {}, "token": "guess"}):
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(json.dumps(request).encode() + b"\n")
            answer = json.loads(sock.makefile("rb").readline())
            assert answer["ok"] is False and "unauthorized" in answer["error"]
            assert sock.recv(1) == b""                               # and the connection is closed
    assert "refused a request without the right token" in b.log_text()
    wrong = tmp_path / "wrong.token"
    wrong.write_text("not-the-token\n")
    refused = subprocess.run([sys.executable, "-m", "broker", "faults", "--admin", f"{host}:{port}",
                              "--token-file", str(wrong), "rules"], capture_output=True, text=True, timeout=30)
    assert refused.returncode == 1 and "unauthorized" in refused.stderr
    allowed = subprocess.run([sys.executable, "-m", "broker", "faults", "--admin", f"{host}:{port}",
                              "--token-file", str(token_file), "rules"], capture_output=True, text=True, timeout=30)
    assert allowed.returncode == 0, allowed.stderr


async def test_faults_leave_the_offsets_log_intact(tmp_path):
    async with trio.open_nursery() as nursery:
        broker = Broker(BrokerConfig.build(TEST_DEFAULTS, port=0, data_dir=str(tmp_path)))
        await nursery.start(broker.serve)
        await broker.ready.wait()
        client = await TrioClient.connect(broker.port)
        group = "intact"
        await join_stable_member(client, group, instance_id="s")
        await broker.control.execute("force_rebalance", group=group)
        await join_stable_member(client, group, instance_id="s")
        await broker.control.execute("fence_instance", group=group, instance="s")
        await broker.control.execute("shard_unavailable", group=group)
        await broker.control.execute("clear")
        broker.stop()                                   # serve() returns once the logs are closed
    assert tools.verify_all(str(tmp_path), None) == []
    assert len(list(tools.dump(str(tmp_path), shard_for(group, 50)))) >= 3     # the group records are there


# --- share groups (KIP-932) ---------------------------------------------------------------------

SGH, SA = REQUESTS[ApiKey.SHARE_GROUP_HEARTBEAT].cls, REQUESTS[ApiKey.SHARE_ACKNOWLEDGE].cls


async def test_share_group_faults(broker):
    await broker.control.execute("record", on=True)
    client = await TrioClient.connect(broker.port)
    await create_topic(client, "sh-orders", 1)
    epoch, topic_id = await share_member(client, "sh", "sh-orders")
    assert acquired(await share_fetch(client, "sh", topic_id, 0)) == []          # starts at the end
    await client.call(ApiKey.PRODUCE, 9, Produce(transactional_id=None, acks=-1, timeout_ms=5000, topic_data=(
        Produce.TopicProduceData(name="sh-orders", partition_data=(Produce.TopicProduceData.PartitionProduceData(
            index=0, records=batch([b"a", b"b"])),)),)))
    assert acquired(await share_fetch(client, "sh", topic_id, 1)) == [(0, 1, 1)]

    await broker.control.execute("hold_locks", group="sh")
    assert await broker.control.execute("expire_locks", group="sh") == "share group sh: 1 lock(s) expired"
    assert acquired(await share_fetch(client, "sh", topic_id, 2)) == [(0, 1, 2)]      # redelivered
    batch_ = SA.AcknowledgeTopic.AcknowledgePartition.AcknowledgementBatch(first_offset=0, last_offset=1,
                                                                          acknowledge_types=(1, 3))
    answer = await client.call(ApiKey.SHARE_ACKNOWLEDGE, 1, SA(
        group_id="sh", member_id="share-member-0001", share_session_epoch=3, topics=(SA.AcknowledgeTopic(
            topic_id=topic_id, partitions=(SA.AcknowledgeTopic.AcknowledgePartition(
                partition_index=0, acknowledgement_batches=(batch_,)),)),)))
    assert answer.error_code == E.NONE and answer.responses[0].partitions[0].error_code == E.NONE, answer

    await broker.control.execute("fail", api="ShareFetch", error="NOT_LEADER_OR_FOLLOWER", group="sh")
    assert (await share_fetch(client, "sh", topic_id, 4)).error_code == E.NOT_LEADER_OR_FOLLOWER
    # recorded requests show the session epochs, the ranges acquired and those acknowledged
    shared = [(r["api"], r["share_session_epoch"], r["acquired"], r["acknowledged"], r["error"])
              for r in await broker.control.execute("recorded") if r["api"] in ("ShareFetch", "ShareAcknowledge")]
    assert shared == [("ShareFetch", 0, (), (), "NONE"), ("ShareFetch", 1, (("sh-orders", 0, 0, 1, 1),), (), "NONE"),
                      ("ShareFetch", 2, (("sh-orders", 0, 0, 1, 2),), (), "NONE"),
                      ("ShareAcknowledge", 3, (), (("sh-orders", 0, 0, 1, "ACCEPT,REJECT"),), "NONE"),
                      ("ShareFetch", 4, (), (), "NOT_LEADER_OR_FOLLOWER")], shared
    heartbeats = [(r["member_epoch"], r["answered_member_epoch"])
                  for r in await broker.control.execute("recorded") if r["api"] == "ShareGroupHeartbeat"]
    assert heartbeats[0][0] == 0 and heartbeats[-1][1] == epoch, heartbeats

    assert await broker.control.execute("force_rebalance", group="sh") == \
        "share group sh: group epoch bumped to 4; members get a new assignment"
    assert await broker.control.execute("expire_member", group="sh", member="share-member-0001") == \
        "member share-member-0001 of share group sh expired"
    answer = await client.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, SGH(
        group_id="sh", member_id="share-member-0001", member_epoch=epoch))
    assert answer.error_code == E.UNKNOWN_MEMBER_ID


async def test_streams_group_members_expire_are_fenced_and_held(broker):
    """The coordinator faults on a streams group (KIP-1071): a forced rebalance bumps its epoch,
    an expired member is gone, a fenced one is told FENCED_MEMBER_EPOCH in Kafka's streams words,
    and held revocations keep a task's new owner waiting until released."""
    client = await TrioClient.connect(broker.port)
    await create_topic(client, "sg-input", 2)
    first, second = StreamsMember(client, "sg", "member-one", "sg-input"), StreamsMember(client, "sg", "member-two",
                                                                                          "sg-input")
    await first.join()
    assert first.tasks == [0, 1] and await group_state(client, "sg") == ("streams", "Stable")
    assert await broker.control.execute("force_rebalance", group="sg") == \
        "streams group sg: group epoch bumped to 3; members reconcile on their next heartbeat"
    assert (await first.beat()).member_epoch == 3

    assert await broker.control.execute("hold_revocations", group="sg") == "group sg: revocations held"
    await second.join()                          # epoch 4: one task moves from first to second
    await first.beat()                           # told to revoke one: it gives it up at once
    assert (first.epoch, first.tasks) == (3, [0])
    for _ in range(3):                           # but the coordinator does not take the revocation
        assert (await first.beat()).member_epoch == 3
        await second.beat()
        assert (second.epoch, second.tasks) == (4, [])
    assert await group_state(client, "sg") == ("streams", "Reconciling")
    await broker.control.execute("release_revocations", group="sg")
    await first.beat()
    await second.beat()
    assert (first.tasks, second.tasks) == ([0], [1]) and await group_state(client, "sg") == ("streams", "Stable")

    outcome = await broker.control.execute("fence_member", group="sg", member="member-two")
    assert outcome == "member member-two of group sg fenced at epoch 4; its next heartbeat gets FENCED_MEMBER_EPOCH"
    answer = await second.beat()
    assert (answer.error_code, answer.error_message) == (ErrorCode.FENCED_MEMBER_EPOCH, (
        "The streams group member has a smaller member epoch (4) than the one known by the group coordinator (5). "
        "The member must abandon all its partitions and rejoin."))
    assert await broker.control.execute("expire_member", group="sg", member="member-one") == \
        "member member-one of streams group sg expired"
    assert (await first.beat()).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert await group_state(client, "sg") == ("streams", "Empty")
