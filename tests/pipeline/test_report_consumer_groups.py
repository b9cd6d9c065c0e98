"""KIP-848 consumer groups in the report: a real broker, real clients, then the consumer_epochs
and member_reconciliations tables and the report's consumer-group section.

One scenario (module fixture, about 15 s) against ``groupbroker serve`` with the journal on:
confluent-kafka 2.16 consumers with ``group.protocol=consumer`` (client ids m0, m1, m2) in group
``kip848`` on a 6-partition topic, beside one classic-protocol consumer in group ``classic``.
Target assignments are not batched (group.consumer.assignment.interval.ms=0), so that each one
is computed with the bump. Each step waits until every member is STABLE at the new group epoch
(read from the journal on disk) before the next (a group starts at epoch 1, Kafka 4.3):

1. m0 joins: epoch 2 (new_member); it takes all 6 partitions at once.
2. m1 joins: epoch 3 (new_member); m0 revokes 3 (UNREVOKED_PARTITIONS), m1 waits for them
   (UNRELEASED_PARTITIONS).
3. m2 joins: epoch 4 (new_member); m0 and m1 revoke one each, m2 waits.
4. m1 leaves (close): epoch 5 (member_left); m0 and m2 only gain free partitions. The target
   assignment comes with the next heartbeat, after the bump.
5. m0 leaves: epoch 6 (member_left), m2 takes everything; then m2 leaves: epoch 7, empty.

The reconciliation times the report gives are checked against the raw journal lines.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from offsets_log.journal import journal_dir, read_journal
from broker.testing.launcher import TEST_DEFAULTS, BrokerProcess
from pipeline.job import TABLES, run
from tests.support.processes import import_client, wait_until

ck = import_client("confluent_kafka")
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

TOPIC, GROUP, CLASSIC = "orders", "kip848", "classic"
PARTITIONS = 6


class Members:
    """The consumers of the scenario, all polled from this thread in turn."""

    def __init__(self, bootstrap: str):
        self.bootstrap = bootstrap
        self.consumers: dict[str, ck.Consumer] = {}

    def add(self, name: str, group: str = GROUP, protocol: str = "consumer") -> ck.Consumer:
        config = {"bootstrap.servers": self.bootstrap, "group.id": group, "client.id": name,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False}
        if protocol == "consumer":
            config["group.protocol"] = "consumer"
        else:
            config.update({"session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
        consumer = self.consumers[name] = ck.Consumer(config)
        consumer.subscribe([TOPIC])
        return consumer

    def poll(self) -> None:
        for consumer in self.consumers.values():
            consumer.poll(0.02)

    def close(self, name: str) -> None:
        self.consumers.pop(name).close()


def journal(data_dir: str) -> list[dict]:
    return list(read_journal(journal_dir(data_dir)))


def stable_at(data_dir: str, epoch: int) -> set[str]:
    """Client ids of the members of GROUP that reached STABLE at ``epoch`` (journal on disk)."""
    events = [e for e in journal(data_dir) if e.get("group") == GROUP]
    clients = {e["member"]: e["client_id"] for e in events if e["event"] == "member_joined"}
    return {clients.get(e["member"]) for e in events if e["event"] == "member_reconciled"
            and e["state"] == "STABLE" and e["epoch"] == e["target_epoch"] == epoch}


@pytest.fixture(scope="module")
def scenario(tmp_path_factory):
    base = tmp_path_factory.mktemp("kip848")
    data = str(base / "data")
    broker = BrokerProcess(data, base / "broker.log",
                           {**TEST_DEFAULTS, "groupbroker.journal.enable": True,
                            "group.consumer.assignment.interval.ms": 0}).start()
    ids = {}
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        for future in admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)]).values():
            future.result(15)
        members = Members(broker.bootstrap)
        members.add("classic-0", CLASSIC, protocol="classic")

        def settle(epoch: int, clients: set[str]) -> None:
            wait_until(lambda: members.poll() or stable_at(data, epoch) >= clients, 20,
                       f"{sorted(clients)} STABLE at epoch {epoch}")

        for epoch, name in enumerate(["m0", "m1", "m2"], 2):
            members.add(name)
            settle(epoch, {f"m{i}" for i in range(epoch - 1)})
            ids[name] = members.consumers[name].memberid()
        members.close("m1")
        settle(5, {"m0", "m2"})
        members.close("m0")
        settle(6, {"m2"})
        members.close("m2")
        members.close("classic-0")
        assert broker.stop() == 0
    finally:
        broker.kill()
    return data, ids


@pytest.fixture(scope="module")
def report(scenario, spark, tmp_path_factory):
    paths = run(spark, [scenario[0]], str(tmp_path_factory.mktemp("kip848-report")))
    tables = {name: [r.asDict(recursive=True) for r in spark.read.parquet(paths[name]).collect()]
              for name in TABLES}
    return tables, Path(paths["report"]).read_text()


def test_group_epochs_with_causes(scenario, report):
    """Six epochs, each with its cause and the member that caused it, and the target
    assignment computed for it (none after the leaves that emptied the group's heartbeats)."""
    _, ids = scenario
    epochs = sorted((r for r in report[0]["consumer_epochs"] if r["group"] == GROUP),
                    key=lambda r: r["epoch"])
    assert [(r["epoch"], r["cause"], r["cause_client_id"]) for r in epochs] == [
        (2, "new_member", "m0"), (3, "new_member", "m1"), (4, "new_member", "m2"),
        (5, "member_left", "m1"), (6, "member_left", "m0"), (7, "member_left", "m2")]
    assert [r["cause_member"] for r in epochs] == [ids[n] for n in ("m0", "m1", "m2", "m1", "m0", "m2")]
    assert [r["outcome"] for r in epochs] == ["reconciled"] * 5 + ["empty"]
    assert [(r["assignor"], r["target_members"]) for r in epochs] == [
        ("uniform", 1), ("uniform", 2), ("uniform", 3), ("uniform", 2), ("uniform", 1), (None, None)]
    assert [sorted(r["members"]) for r in epochs] == [
        sorted(ids[n] for n in names) for names in
        (["m0"], ["m0", "m1"], ["m0", "m1", "m2"], ["m0", "m2"], ["m2"], [])]
    assert [(r["revoking_members"], r["waiting_members"]) for r in epochs] == [
        (0, 0), (1, 1), (2, 1), (0, 0), (0, 0), (0, 0)]
    # a join computes its target at once; a leave's comes with the next member's heartbeat
    assert [r["assignment_ms"] for r in epochs[:3]] == [0, 0, 0]
    assert 0 <= epochs[3]["assignment_ms"] <= 2000 and 0 <= epochs[4]["assignment_ms"] <= 2000
    for before, after in zip(epochs, epochs[1:]):
        assert before["next_epoch_time"] == after["start_time"] == after["bump_time"]
    assert {r["group_epochs"] for r in epochs} == {6}
    assert not [r for r in report[0]["consumer_epochs"] if r["group"] != GROUP]


def test_reconciliation_per_member(scenario, report):
    """Every member's way to every epoch: reconciled, with the time from the bump to its STABLE
    line in the journal; who revoked and who waited; per member, the epochs spent doing so."""
    data, ids = scenario
    names = {v: k for k, v in ids.items()}
    rows = {(r["epoch"], names[r["member"]]): r for r in report[0]["member_reconciliations"]
            if r["group"] == GROUP}
    assert sorted(rows) == [(2, "m0"), (3, "m0"), (3, "m1"), (4, "m0"), (4, "m1"), (4, "m2"),
                            (5, "m0"), (5, "m2"), (6, "m2")]
    assert {r["outcome"] for r in rows.values()} == {"reconciled"}
    assert {k for k, r in rows.items() if r["joined"]} == {(2, "m0"), (3, "m1"), (4, "m2")}
    assert {k for k, r in rows.items() if r["revoking"]} == {(3, "m0"), (4, "m0"), (4, "m1")}
    assert {k for k, r in rows.items() if r["waiting"]} == {(3, "m1"), (4, "m2")}
    assert {n: (r["member_epochs"], r["member_epochs_revoking"], r["member_epochs_waiting"],
                r["member_unfinished"]) for (_, n), r in rows.items()} == {
        "m0": (4, 2, 0, 0), "m1": (2, 1, 1, 0), "m2": (3, 0, 1, 0)}
    # the times, from the raw journal: each epoch's bump to the member's STABLE at it
    events = [e for e in journal(data) if e.get("group") == GROUP]
    bumps = {e["epoch"]: e["t"] for e in events if e["event"] == "group_epoch_bumped"}
    stable = {(e["epoch"], names[e["member"]]): e["t"] for e in events
              if e["event"] == "member_reconciled" and e["state"] == "STABLE"
              and e["epoch"] == e["target_epoch"]}
    assert {k: r["reconcile_ms"] for k, r in rows.items()} == {
        k: t - bumps[k[0]] for k, t in stable.items()}
    assert rows[(2, "m0")]["reconcile_ms"] == 0
    # a member waiting for partitions gets there only after those who revoke them
    assert rows[(3, "m1")]["reconciled_time"] >= rows[(3, "m0")]["reconciled_time"]
    assert rows[(4, "m2")]["reconciled_time"] >= max(rows[(4, "m0")]["reconciled_time"],
                                                     rows[(4, "m1")]["reconciled_time"])
    assert all(r["steps"] == (2 if r["revoking"] or r["waiting"] else 1) for r in rows.values())
    assert all(0 <= r["reconcile_ms"] < 10_000 for r in rows.values())


def test_beside_classic_rebalances(report):
    """The classic group keeps its rebalances (and no epochs); the consumer group has epochs
    and no classic rebalances."""
    tables = report[0]
    classic = sorted((r for r in tables["rebalances"] if r["group"] == CLASSIC),
                     key=lambda r: r["generation"])
    assert [(r["generation"], r["cause"], r["outcome"]) for r in classic][:1] == [
        (1, "new_member", "stable")]
    assert classic[-1]["cause"] == "member_left"
    assert not [r for r in tables["rebalances"] if r["group"] == GROUP]


def _cells(table: str) -> list[list[str]]:
    """The data cells of each body row of an HTML table."""
    rows = (re.findall(r"<td>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", table))
    return [cells for cells in rows if cells]


def test_report_section(scenario, report):
    """report.html has the consumer-group section: its chart, the epochs with their causes and
    the members' reconciliations, by client id."""
    page = report[1]
    section = page.split('<h2 id="consumer-groups">', 1)[1]
    assert 'alt="consumer-reconciliation"' in section
    cells = _cells(section.split("<h3>Latest group epochs</h3>", 1)[1].split("<h3>", 1)[0])
    assert [(c[2], c[4], c[5], c[-1]) for c in cells] == [
        ("7", "member_left", "m2", "empty"), ("6", "member_left", "m0", "reconciled"),
        ("5", "member_left", "m1", "reconciled"), ("4", "new_member", "m2", "reconciled"),
        ("3", "new_member", "m1", "reconciled"), ("2", "new_member", "m0", "reconciled")]
    members = section.split("<h3>Members: epochs spent revoking and waiting</h3>", 1)[1]
    rows = {c[2]: c for c in _cells(members)}
    assert {n: (c[4], c[7], c[8]) for n, c in rows.items()} == {
        "m0": ("4", "2", "0"), "m1": ("2", "1", "1"), "m2": ("3", "0", "1")}
