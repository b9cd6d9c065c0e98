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
from broker.client.trio_stream import TrioClient
from tests.support.wire import join_stable_member

E = ErrorCode
Heartbeat, FindCoordinator, Produce = REQUESTS[ApiKey.HEARTBEAT].cls, REQUESTS[ApiKey.FIND_COORDINATOR].cls, REQUESTS[ApiKey.PRODUCE].cls


@pytest.fixture
async def broker(serve_broker):
    return await serve_broker(TEST_DEFAULTS)


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
