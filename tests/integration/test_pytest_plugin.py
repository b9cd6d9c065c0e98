"""The ``groupbroker`` pytest fixture as users use it: real clients in plain, asyncio and trio
tests, fault injection, crash-style and graceful restarts, recorded requests."""

import asyncio
import time

import pytest

from tests.support.processes import import_client
from protocol import REQUESTS
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from tests.support.trio_client import TrioClient
from tests.support.wire import join_stable_member

kafka = import_client("kafka")
aiokafka = import_client("aiokafka")

TOPIC = "plugin-topic"


def produce(bootstrap: str, values: list[bytes]) -> None:
    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap)
    for v in values:
        producer.send(TOPIC, v)
    producer.flush()
    producer.close()


def consumer(bootstrap: str, group: str):
    # kafka-python's leader may assign before its metadata knows the topic, and rejoins only once
    # a metadata refresh shows it: refreshed every second here, not every five minutes
    return kafka.KafkaConsumer(TOPIC, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                               enable_auto_commit=False, session_timeout_ms=1000, heartbeat_interval_ms=100,
                               metadata_max_age_ms=1000)


def poll_until(c, wanted: int, timeout_s: float = 20.0) -> list[bytes]:
    got, deadline = [], time.monotonic() + timeout_s
    while len(got) < wanted and time.monotonic() < deadline:
        for records in c.poll(timeout_ms=200).values():
            got += [r.value for r in records]
    return got


def test_an_injected_heartbeat_error_makes_a_real_consumer_rejoin(groupbroker):
    produce(groupbroker.bootstrap_servers, [b"a", b"b"])
    c = consumer(groupbroker.bootstrap_servers, "plugin-g")
    try:
        assert poll_until(c, 2) == [b"a", b"b"]
        groupbroker.recorded(clear=True)
        groupbroker.faults.fail("Heartbeat", "REBALANCE_IN_PROGRESS", group="plugin-g")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not any(
                r.api == "SyncGroup" and r.error == "NONE" for r in groupbroker.recorded()):
            c.poll(timeout_ms=100)
        calls = [(r.api, r.error) for r in groupbroker.recorded() if r.group == "plugin-g"]
        hb = calls.index(("Heartbeat", "REBALANCE_IN_PROGRESS"))
        assert ("JoinGroup", "NONE") in calls[hb:] and ("SyncGroup", "NONE") in calls[hb:], calls
        produce(groupbroker.bootstrap_servers, [b"c"])
        assert poll_until(c, 1) == [b"c"]                  # it consumes on after the rebalance
    finally:
        c.close()


@pytest.mark.parametrize("crash", [True, False], ids=["crash", "graceful"])
def test_committed_offsets_survive_a_restart(groupbroker, crash):
    produce(groupbroker.bootstrap_servers, [b"1", b"2", b"3"])
    c = consumer(groupbroker.bootstrap_servers, "restarted")
    assert poll_until(c, 3) == [b"1", b"2", b"3"]
    c.commit()
    c.close()
    port = groupbroker.port
    groupbroker.restart(crash=crash)
    assert groupbroker.port == port
    produce(groupbroker.bootstrap_servers, [b"4"])
    again = consumer(groupbroker.bootstrap_servers, "restarted")
    try:
        assert poll_until(again, 1) == [b"4"]              # resumes after the committed offset
    finally:
        again.close()


@pytest.mark.groupbroker(props={"group.max.size": "1"})
def test_the_marker_sets_the_brokers_config(groupbroker):
    produce(groupbroker.bootstrap_servers, [b"x"])
    first = consumer(groupbroker.bootstrap_servers, "tiny")
    try:
        assert poll_until(first, 1) == [b"x"]
        second = consumer(groupbroker.bootstrap_servers, "tiny")
        with pytest.raises(kafka.errors.KafkaError):
            poll_until(second, 1, timeout_s=5)
        second.close()
        assert any(r.api == "JoinGroup" and r.error == "GROUP_MAX_SIZE_REACHED" for r in groupbroker.recorded())
    finally:
        first.close()


def test_asyncio_clients_work_the_same(groupbroker):
    groupbroker.faults.fail("FindCoordinator", "COORDINATOR_NOT_AVAILABLE")

    async def main() -> list[bytes]:
        producer = aiokafka.AIOKafkaProducer(bootstrap_servers=groupbroker.bootstrap_servers)
        await producer.start()
        await producer.send_and_wait(TOPIC, b"async")
        await producer.stop()
        c = aiokafka.AIOKafkaConsumer(TOPIC, bootstrap_servers=groupbroker.bootstrap_servers, group_id="aio",
                                      auto_offset_reset="earliest")
        await c.start()
        try:
            return [(await asyncio.wait_for(c.getone(), 20)).value]
        finally:
            await c.stop()

    assert asyncio.run(main()) == [b"async"]
    found = [(r.api, r.error) for r in groupbroker.recorded() if r.api == "FindCoordinator"]
    assert found[0] == ("FindCoordinator", "COORDINATOR_NOT_AVAILABLE") and ("FindCoordinator", "NONE") in found


async def test_trio_tests_use_it_too(groupbroker):
    client = await TrioClient.connect(groupbroker.port)
    member, generation = await join_stable_member(client, "trio-g")
    groupbroker.faults.force_rebalance("trio-g")
    hb = REQUESTS[ApiKey.HEARTBEAT].cls(group_id="trio-g", generation_id=generation, member_id=member)
    assert (await client.call(ApiKey.HEARTBEAT, 4, hb)).error_code == ErrorCode.REBALANCE_IN_PROGRESS


def test_the_plugin_is_installed_for_other_projects(pytester):
    pytester.makepyfile(test_user="""
        import socket

        def test_broker(groupbroker):
            host, port = groupbroker.bootstrap_servers.split(":")
            socket.create_connection((host, int(port))).close()
            groupbroker.faults.fail("Heartbeat", "REBALANCE_IN_PROGRESS", count=2)
            assert groupbroker.faults.rules() == [
                "rule 1: Heartbeat: answer REBALANCE_IN_PROGRESS (next 2)"]
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


#: the README's example as a user's test (indented as the user test files below are)
README_ROUNDTRIP = """
        def test_roundtrip(groupbroker):
            producer = KafkaProducer(bootstrap_servers=groupbroker.bootstrap_servers)
            producer.send("orders", b"hello")
            producer.flush()
            producer.close()
            consumer = KafkaConsumer("orders", group_id="billing", auto_offset_reset="earliest",
                                     bootstrap_servers=groupbroker.bootstrap_servers, consumer_timeout_ms=10000)
            assert [m.value for m in consumer] == [b"hello"]
            consumer.close()
"""


def test_the_readme_example_runs_without_the_clients_deprecation_noise(pytester):
    """kafka-python 3.0.12 warns twice per schema it loads; the plugin keeps a user's run as
    quiet as it would be without that, and leaves the user's own warnings alone."""
    pytester.makepyfile(test_user="""
        import importlib.resources
        import warnings
        from kafka import KafkaConsumer, KafkaProducer

""" + README_ROUNDTRIP + """

        def test_users_own_warnings_still_show():
            importlib.resources.read_text("json", "__init__.py")
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, warnings=1)
    result.stdout.fnmatch_lines(["*test_user.py*read_text is deprecated*"])


def test_the_same_tests_run_against_apache_kafka(pytester, kafka_oracle):
    """``--groupbroker-backend=kafka``: the user's tests meet Kafka itself (its ApiVersions
    answer finalizes share and streams groups, which groupbroker does not serve yet); faults fail
    with a message, clusters of nodes are skipped. (kafka_oracle: Java and Maven are there.)"""
    pytester.makepyfile(test_user="""
        import pytest
        from kafka import KafkaConsumer, KafkaProducer
        from kafka_client.blocking import BlockingClient

""" + README_ROUNDTRIP + """

        def test_it_is_kafka(groupbroker):
            host, port = groupbroker.bootstrap_servers.split(":")
            client = BlockingClient(host, int(port))
            answer = client.call(18, 3, client.session.api_versions_request(3))
            client.close()
            assert {f.name for f in answer.finalized_features} >= {"share.version", "streams.version"}

        def test_faults_are_groupbrokers_own(groupbroker):
            with pytest.raises(RuntimeError, match="fault injection: groupbroker's own"):
                groupbroker.faults.fail("Heartbeat", "REBALANCE_IN_PROGRESS")

        @pytest.mark.groupbroker(nodes=3)
        def test_a_cluster(groupbroker):
            pass
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--groupbroker-backend=kafka")
    result.assert_outcomes(passed=3, skipped=1)
