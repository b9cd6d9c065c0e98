"""Issue 5 interop matrix, issue 27 part 6: Sarama (IBM/sarama v1.61.1, from the Go module
proxy) at ``sarama.V4_3_1_0`` through the shared consumer-group lifecycle (group_lifecycle.py),
against ``groupbroker serve`` and, compared step by step, against Apache Kafka 4.3.1.

The client side is tests/interop/clients/sarama/ (main.go, go.mod, go.sum), built once per
source and Go version into ~/.cache/groupbroker/go-clients/ (tests/support/go_clients.py;
.ci/setup/go-clients.sh builds it before the tests in CI). Sarama uses the range strategy,
marks each record, commits every 100 ms and when a generation ends; ``Close()`` sends
LeaveGroup.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests.support.go_drivers import go_driver
from tests.support.group_lifecycle import (PARTITIONS, BrokerView, Client, ClientProcess, Lifecycle,
                                           create_topic, run_lifecycle, run_parallel)
from tests.support.processes import state_changes, wait_until


@pytest.fixture(scope="session")
def sarama_driver() -> str:
    return go_driver("sarama")


def sarama_client(driver: str, bootstrap: str, tmp_path, prefix: str = "") -> Client:
    def produce(topic: str, start: int, count: int) -> None:
        run_parallel([[driver, "produce", bootstrap, topic, str(start), str(count), str(PARTITIONS)]])

    def consume(name: str, group: str, topic: str) -> ClientProcess:
        return ClientProcess(name, [driver, "consume", bootstrap, topic, group, name],
                             tmp_path / f"{prefix}{name}.log")

    return Client("sarama", produce, consume)


def test_group_lifecycle_sarama(broker, sarama_driver, tmp_path):
    """produce -> 3 members consume and commit all -> a 4th joins -> one leaves -> offsets read
    back with the groups CLI; every record read exactly once, by its partition's owner."""
    run_lifecycle(broker, sarama_client(sarama_driver, broker.bootstrap, tmp_path))


def observed_lifecycle(broker, client: Client, group_log: bool) -> dict:
    """The lifecycle's steps (group_lifecycle._steps) on a broker of the run, on a topic and group
    of their own, returning what was observed at each step: the partitions each member holds
    (the range strategy's are the same whatever the member ids), the committed offsets. Without
    ``group_log`` (Kafka) the checks that read groupbroker's log of state changes are left out."""
    run = Lifecycle(broker, client)
    run.topic = run.group = "sarama-compared"
    run.view = BrokerView(broker.bootstrap, run.group, run.topic)
    create_topic(broker.bootstrap, run.topic)
    seen = {}
    try:
        try:
            run.join("c1", "c2", "c3")
            seen["3 members"] = sorted(sorted(ps) for ps in run.stable(["c1", "c2", "c3"]).values())
            run.phase(run.stable(["c1", "c2", "c3"]))
            run.join("c4")
            seen["4 members"] = sorted(sorted(ps) for ps in run.stable(["c1", "c2", "c3", "c4"]).values())
            run.phase(run.stable(["c1", "c2", "c3", "c4"]))
            seen["c2 exit"] = run.members["c2"].leave()
            owners = run.stable(["c1", "c3", "c4"])
            seen["after c2 left"] = sorted(sorted(ps) for ps in owners.values())
            if group_log:
                assert any(c["reason"] == "members left the group"
                           for c in state_changes(broker.log_text(), run.group))
            run.phase(owners)
            run.read_back()
            seen["committed"] = run.view.committed()
            seen["others exit"] = [run.members[n].leave() for n in ("c1", "c3", "c4")]
            wait_until(lambda: run.view.owners() == ("Empty", {}), 15, "the group to become Empty", 0.1)
            seen["records"] = len(run.consumed())
        except AssertionError as e:
            raise AssertionError(f"{e}\n{run.diagnostics()}") from None
    finally:
        for m in run.members.values():
            m.close()
    return seen


def test_lifecycle_same_on_kafka_sarama(oracle_twin, kafka_oracle, sarama_driver, tmp_path):
    """The lifecycle on groupbroker (the run's oracle twin) and on Apache Kafka with the same
    settings: each passes, and the assignments and offsets seen at each step are the same."""
    kafka = SimpleNamespace(bootstrap=kafka_oracle.bootstrap_servers, log_text=lambda: "")
    seen, failed = {}, []
    for name, broker, group_log in (("groupbroker", oracle_twin, True), ("kafka", kafka, False)):
        try:
            seen[name] = observed_lifecycle(
                broker, sarama_client(sarama_driver, broker.bootstrap, tmp_path, f"{name}-"), group_log)
        except AssertionError as e:
            failed.append(f"on {name}: {e}")
    assert not failed, "\n\n".join(failed)
    assert seen["groupbroker"] == seen["kafka"], f"groupbroker and Kafka differ: {seen}"
    assert seen["kafka"]["3 members"] == [[0, 1], [2, 3], [4, 5]]
