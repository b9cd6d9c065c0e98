"""Issue 27, part 4, and issue 29: Kafka Streams 4.3.1 against groupbroker and against Apache Kafka
4.3.1 itself, the same application on both at once, and what it observed compared; with the
classic group protocol (Streams' own assignor in the leader) and with the streams rebalance
protocol of KIP-1071 (``group.protocol=streams``: the broker assigns the tasks).

``tests/interop/clients/streams/src/StreamsScenarios.java`` is a word count with a RocksDB store
and its changelog, behind a repartition by word (see its header). It needs of a broker what
Streams needs: internal topics created with their configs, DescribeConfigs, ListOffsets,
DeleteRecords of the repartition topic, consumer groups with Streams' own assignor and, under
exactly_once_v2, transactions with sendOffsetsToTransaction.

Each run must hold on its own (exact counts, each word's outputs exactly 1..n, the tasks split
and taken over, the restores reading exactly the changelog records they should, the input
committed to its end), and the two runs must agree on what the application saw: the tasks each
instance held per stage (how many of each subtopology: which ones follows random process ids),
its state transitions (a repeated REBALANCING, RUNNING cycle counted once: how many rebalances
a cooperative hand-over takes follows timing), the records restored, the outputs, the internal
topics' configs and the committed offsets.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.interop.java_driver import JVM_FLAGS, all_jars, assert_same, compiled
from tests.support.processes import missing

SOURCE = Path(__file__).resolve().parent / "clients" / "streams"
#: as StreamsScenarios.java has them: input partitions, and lines per batch, each line holding one
#: word of each partition of the repartition topic (so LINES count updates per store partition)
PARTITIONS, LINES = 4, 40
HALTED = 99                          # eos-crash's exit code: Runtime.halt, once it printed its report


@pytest.fixture(scope="session")
def streams_classpath() -> str:
    return compiled(SOURCE, "StreamsScenarios", all_jars())


def run_jvm(classpath: str, bootstrap: str, scenario: str, prefix: str, work: Path, *, code: int = 0,
            timeout: float = 80, protocol: str = "classic") -> dict:
    """One JVM: ``scenario`` against the broker at ``bootstrap``, its state dirs under ``work``;
    the JSON document it printed last."""
    java = shutil.which("java")
    if java is None:
        missing("Kafka Streams' tests need Java 17: no `java` on PATH")
    tmp = work / "jvm-tmp"                     # RocksDB unpacks its native library there
    tmp.mkdir(parents=True, exist_ok=True)
    log = work / f"{scenario}.log"
    cmd = [java, *JVM_FLAGS, f"-Djava.io.tmpdir={tmp}", f"-Dgroup.protocol={protocol}", f"-Dlog4j2.configurationFile={SOURCE / 'log4j2.properties'}",
           "-cp", classpath, "StreamsScenarios", scenario, bootstrap, prefix, str(work / "state")]
    with open(log, "w") as err:
        done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=err, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    (work / f"{scenario}.json").write_text(done.stdout)
    if done.returncode != code:
        raise AssertionError(f"{scenario} against {bootstrap} exited {done.returncode}, not {code}:\n"
                             f"{log.read_text()[-6000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(params=["classic", "streams"])
def protocol(request) -> str:
    """The application's group.protocol."""
    return request.param


@pytest.fixture
def on_both(streams_classpath, oracle_twin, kafka_oracle, tmp_path, protocol):
    """on_both(*scenarios) -> (groupbroker's documents, Kafka's): the scenarios run one after
    the other against each broker, the two brokers at once; names and state dirs their own."""
    def run(*scenarios: tuple[str, int]):
        prefix = f"streams-{uuid.uuid4().hex[:8]}"

        def sequence(broker: str, bootstrap: str):
            work = tmp_path / broker
            return [run_jvm(streams_classpath, bootstrap, scenario, prefix, work, code=code, protocol=protocol)
                    for scenario, code in scenarios]

        with ThreadPoolExecutor(2) as pool:
            ours = pool.submit(sequence, "groupbroker", oracle_twin.bootstrap)
            theirs = pool.submit(sequence, "kafka", kafka_oracle.bootstrap_servers)
            return ours.result(), theirs.result()
    return run


# --- what the application saw, in a shape both brokers must agree on ---------------------------

def states(transitions: list) -> dict[str, list[str]]:
    """Per stage, the states an instance went through, a repeated REBALANCING, RUNNING cycle
    once (a cooperative hand-over takes one or two rebalances, as the timing falls)."""
    out: dict[str, list[str]] = {}
    for stage, before, now in transitions:
        seq = out.setdefault(stage, [before])
        if seq[-1] != before:
            seq.append(before)
        seq.append(now)
    for seq in out.values():
        i = 0
        while i + 3 < len(seq):
            if seq[i:i + 2] == seq[i + 2:i + 4]:
                del seq[i + 2:i + 4]
            else:
                i += 1
    return out


def task_sizes(tasks: list[str]) -> list[int]:
    """How many tasks of each subtopology ("0_2" is subtopology 0, partition 2)."""
    return [sum(1 for t in tasks if t.startswith(f"{sub}_")) for sub in (0, 1)]


def restored(restores: list) -> dict[str, list]:
    """Per stage, the records each restore read, sorted (which partition follows the assignment)."""
    out: dict[str, list] = {}
    for r in restores:
        out.setdefault(r["stage"], []).append([r["topic"], r["store"], r["restored"]])
    return {stage: sorted(v) for stage, v in out.items()}


def check_counts(doc: dict, batches: int, broker: str) -> None:
    """Exact counts, and each word's outputs (read_committed) exactly 1, 2, ..., n: nothing
    counted twice, lost or seen from an aborted transaction."""
    expected = doc["expected"]
    assert sum(expected.values()) == batches * LINES * PARTITIONS, f"{broker}: the input read back {expected}"
    assert doc["counts"] == expected, f"{broker}: counts {doc['counts']}, expected {expected}"
    for word, n in expected.items():
        assert doc["outputs"][word] == list(range(1, n + 1)), f"{broker}: {word}'s outputs {doc['outputs'][word]}"
    ends = {str(p): batches * LINES // PARTITIONS for p in range(PARTITIONS)}
    assert doc["input_ends"] == ends and doc["committed_input"] == ends, (
        f"{broker}: input committed {doc['committed_input']}, its ends {doc['input_ends']}")


def check_states(transitions: list, broker: str) -> None:
    assert transitions and transitions[-1][1:] == ["PENDING_SHUTDOWN", "NOT_RUNNING"], f"{broker}: {transitions}"
    assert not [t for t in transitions if "ERROR" in t[2]], f"{broker}: {transitions}"


# --- scenarios ------------------------------------------------------------------------------------

def check_failover(doc: dict, broker: str, protocol: str) -> None:
    check_counts(doc, 2, broker)
    every = {f"{sub}_{p}" for sub in (0, 1) for p in range(PARTITIONS)}
    alone, both, left = doc["stages"]
    assert set(alone["tasks"]["a"]) == every and set(left["tasks"]["a"]) == every, f"{broker}: {doc['stages']}"
    a, b = both["tasks"]["a"], both["tasks"]["b"]
    assert a and b and not set(a) & set(b) and set(a) | set(b) == every, f"{broker}: the tasks split {a} / {b}"
    # a restored b's store partitions from the changelog: the first batch's updates, all of them
    taken = sorted(int(t.split("_")[1]) for t in b if t.startswith("1_"))
    took = sorted(r["partition"] for r in doc["restores"]["a"] if r["stage"] == "b_left" and r["restored"])
    assert took == taken, f"{broker}: a restored {doc['restores']['a']}, b held {b}"
    for r in doc["restores"]["a"] + doc["restores"]["b"]:
        assert r["restored"] in (0, LINES) and r["topic"] == "counts-changelog", f"{broker}: restore {r}"
    assert doc["purged_repartition"]["purged"], f"{broker}: the repartition topic kept {doc['purged_repartition']}"
    assert doc["committed_repartition"] == doc["purged_repartition"]["end"], f"{broker}: {doc['committed_repartition']}"
    # Admin's view of the group: Streams' own assignor in a classic group, each member's input and
    # repartition partitions; the broker's sticky assignor in a streams group, each member's tasks
    group = both["group"]
    assert group["assignor"] == ("stream" if protocol == "classic" else "sticky") and group["state"] == "Stable", (
        f"{broker}: {group}")
    held = [m[2] for m in group["members"]] if protocol == "classic" else [m[0] + m[1] for m in group["members"]]
    assert sorted(held) == sorted([len(a), len(b)]), f"{broker}: the group's members {group} and the tasks {a} / {b}"
    alone = [PARTITIONS, PARTITIONS, 2 * PARTITIONS if protocol == "classic" else 0]
    assert left["group"]["members"] == [alone], f"{broker}: {left['group']}"
    topics = doc["internal_topics"]
    assert topics["counts-changelog"]["configs"].get("cleanup.policy") == "compact", f"{broker}: {topics}"
    assert topics["words-repartition"]["configs"].get("cleanup.policy") == "delete", f"{broker}: {topics}"
    for name in ("a", "b"):
        check_states(doc["transitions"][name], broker)


def failover_view(doc: dict) -> dict:
    return {"sizes": [[s["stage"], {k: task_sizes(v) for k, v in s["tasks"].items()}, s.get("group")]
                      for s in doc["stages"]],
            "states": {k: states(v) for k, v in doc["transitions"].items()},
            "restored": {k: restored(v) for k, v in doc["restores"].items()},
            **{k: doc[k] for k in ("expected", "counts", "outputs", "purged_repartition", "committed_input",
                                   "committed_repartition", "internal_topics")}}


def test_word_count_failover(on_both, protocol):
    """Two instances (two KafkaStreams in one JVM, each its own consumer, state dir and process id)
    split the eight tasks of a four-partition input; after the first batch b leaves the group on
    close, a takes its tasks over, restoring b's store partitions from the changelog, and counts
    the second batch: every count exact (at_least_once with clean hand-overs counts nothing twice)."""
    [ours], [kafka] = on_both(("failover", 0))
    check_failover(ours, "groupbroker", protocol)
    check_failover(kafka, "Kafka", protocol)
    assert_same(failover_view(ours), failover_view(kafka), "failover")


def test_exactly_once_across_a_kill(on_both):
    """exactly_once_v2: the first JVM counts a batch, then halts (Runtime.halt) with a transaction
    open whose output record is already in the topic; a second JVM on the same state dir wipes the
    store, restores it from the changelog (the committed updates only), and finishes the input.
    Read with read_committed each word's outputs are exactly 1..n: the aborted record is never
    seen, nothing is counted twice."""
    (crash, ours), (kafka_crash, kafka) = on_both(("eos-crash", HALTED), ("eos-restart", 0))
    for first, doc, broker in ((crash, ours, "groupbroker"), (kafka_crash, kafka, "Kafka")):
        assert len(first["tasks"]) == 2 * PARTITIONS and len(doc["tasks"]) == 2 * PARTITIONS, broker
        assert sum(first["first_batch"].values()) == LINES * PARTITIONS, f"{broker}: {first['first_batch']}"
        assert first["open_update_committed"] is False, f"{broker}: the open transaction's output was committed"
        check_counts(doc, 2, broker)
        assert doc["output_records"] == sum(doc["expected"].values()), broker
        assert doc["output_records_uncommitted"] > doc["output_records"], (
            f"{broker}: no aborted record in the output ({doc['output_records_uncommitted']} records)")
        # the store was wiped and restored from the changelog: the first batch's updates, committed
        assert sorted(r["restored"] for r in doc["restores"]) == [LINES] * PARTITIONS, f"{broker}: {doc['restores']}"
        check_states(doc["transitions"], broker)
    view = lambda first, doc: {                                                    # noqa: E731
        "crash": {"tasks": task_sizes(first["tasks"]), "first_batch": first["first_batch"],
                  "states": states(first["transitions"]), "restored": restored(first["restores"])},
        "restart": {"tasks": task_sizes(doc["tasks"]), "states": states(doc["transitions"]),
                    "restored": restored(doc["restores"]),
                    **{k: doc[k] for k in ("expected", "counts", "outputs", "output_records",
                                           "output_records_uncommitted", "committed_input")}}}
    assert_same(view(crash, ours), view(kafka_crash, kafka), "exactly once")


def test_exactly_once_takeover_from_a_killed_instance(on_both):
    """exactly_once_v2 with two instances: a in the test's JVM, b in a child JVM that halts with a
    transaction open (its first update of the second batch already in the output). a takes b's
    tasks over once b's session expires, restoring b's store partitions up to b's last commit, and
    reads past b's records once the broker has aborted b's transaction for its timeout (a new
    transactional id cannot fence it: only the coordinator's timeout ends it). Counts exact, each
    word's outputs exactly 1..n."""
    [ours], [kafka] = on_both(("eos-takeover", 0))
    for doc, broker in ((ours, "groupbroker"), (kafka, "Kafka")):
        assert doc["b_exit"] == HALTED, f"{broker}: b exited {doc['b_exit']}"
        check_counts(doc, 2, broker)
        assert doc["output_records"] == sum(doc["expected"].values()), broker
        assert doc["output_records_uncommitted"] > doc["output_records"], (
            f"{broker}: no aborted record in the output ({doc['output_records_uncommitted']} records)")
        both, killed = doc["stages"]
        a, b = both["tasks"]["a"], both["tasks"]["b"]
        every = {f"{sub}_{p}" for sub in (0, 1) for p in range(PARTITIONS)}
        assert a and b and not set(a) & set(b) and set(a) | set(b) == every, f"{broker}: the tasks split {a} / {b}"
        assert set(killed["tasks"]["a"]) == every, f"{broker}: {killed}"
        # b's store partitions, restored by a: b's committed updates, the first batch's
        taken = sorted(int(t.split("_")[1]) for t in b if t.startswith("1_"))
        took = sorted(r["partition"] for r in doc["restores"] if r["stage"] == "b_killed" and r["restored"])
        assert took == taken, f"{broker}: a restored {doc['restores']}, b held {b}"
        assert all(r["restored"] in (0, LINES) for r in doc["restores"]), f"{broker}: {doc['restores']}"
        check_states(doc["transitions"], broker)
    view = lambda doc: {                                                            # noqa: E731
        "sizes": [[s["stage"], {k: task_sizes(v) for k, v in s["tasks"].items()}, s["group"]] for s in doc["stages"]],
        "states": states(doc["transitions"]), "restored": restored(doc["restores"]),
        **{k: doc[k] for k in ("expected", "counts", "outputs", "output_records", "committed_input")}}
    assert_same(view(ours), view(kafka), "takeover")


def test_scaling_out_and_in_with_a_standby(on_both, protocol):
    """exactly_once_v2 with one standby replica (with the streams protocol, the group config
    streams.num.standby.replicas): one instance, then three, then two. At each stage every task
    runs once, each stateful task has its standby on another instance, the counts are exact; and
    the tasks and standbys are spread as Kafka spreads them (the same sizes per instance, and
    with the streams protocol, whose assignor is the broker's, the very same tasks)."""
    [ours], [kafka] = on_both(("scale", 0))
    for doc, broker in ((ours, "groupbroker"), (kafka, "Kafka")):
        check_counts(doc, 3, broker)
        assert doc["output_records"] == sum(doc["expected"].values()), broker
        for stage in doc["stages"]:
            placed = stage["tasks"].values()
            active = [t for p in placed for t in p["active"]]
            assert sorted(active) == sorted(f"{s}_{p}" for s in (0, 1) for p in range(PARTITIONS)), (broker, stage)
            standby = [t for p in placed for t in p["standby"]]
            assert len(standby) == (0 if stage["stage"] == "one" else PARTITIONS), (broker, stage)
            assert all(t.startswith("1_") for t in standby), (broker, stage)       # stateful tasks only
            for p in placed:
                assert not set(p["active"]) & set(p["standby"]), (broker, stage)   # never both on one instance
        for name, transitions in doc["transitions"].items():
            check_states(transitions, f"{broker} {name}")

    def view(doc):
        def placement(tasks):
            if protocol == "streams":     # which instance gets which tasks follows their process ids
                return sorted([task_sizes(p["active"]), len(p["standby"])] for p in tasks.values())
            return sorted(len(p["active"]) + len(p["standby"]) for p in tasks.values())
        return {"stages": [[s["stage"], placement(s["tasks"]), s.get("group", {}).get("members")]
                           for s in doc["stages"]],
                **{k: doc[k] for k in ("expected", "counts", "outputs", "output_records", "committed_input")}}
    assert_same(view(ours), view(kafka), "scaling")
