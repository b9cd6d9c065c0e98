"""librdkafka's own integration tests (its tests/ directory, librdkafka 2.15.1) against
``groupbroker serve``.

.ci/setup/librdkafka-tests.sh builds librdkafka and its ``test-runner`` from the npm package
@confluentinc/kafka-javascript (which bundles librdkafka's source, tests included) into
/opt/librdkafka-tests/current (``LIBRDKAFKA_TESTS_DIR`` points elsewhere); in CI a missing build
fails every case, elsewhere it skips them.

Each case runs one librdkafka test number on a fresh broker, the way librdkafka's own CI runs
them against an existing cluster: a ``test.conf`` with ``bootstrap.servers``, the broker
declared as Apache Kafka 4.0 (``TEST_KAFKA_VERSION``), one test at a time (``-p1``), no
broker-less or mock-cluster tests (``-L``), no socket-emulation tests (``-E``), the runner's CI
mode (``CI``: three times the timeouts). The broker is set up like librdkafka's trivup
scenarios: ``default`` (topics auto-created with 4 partitions) or ``noautocreate``. A number with
several variants runs all of them for its scenario and each named one must pass; ``SUBTESTS``
narrows a test to the sub-tests whose name contains it (0081, the admin test, is split by API
that way). The few tests that run Kafka's ``kafka-topics.sh`` get librdkafka_kafka_topics.py
in its place, which does the same through the Admin API.

:data:`PASSING` must pass (:data:`SLOW` too, when ``LIBRDKAFKA_TESTS_ALL`` is set). Tests
left out (ACLs, SASL/SSL, several brokers, Kafka 4.2 share groups, ...) are
listed with their reason in :data:`OUT_OF_SCOPE`.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.processes import missing

BUILD = Path(os.environ.get("LIBRDKAFKA_TESTS_DIR", "/opt/librdkafka-tests/current"))
SETUP = ".ci/setup/librdkafka-tests.sh (as root)"
KAFKA_TOPICS = Path(__file__).resolve().parent.parent / "support" / "librdkafka_kafka_topics.py"
CASE_TIMEOUT_S = 240
BROKER = {"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 1000,
          "num.partitions": 4}
SCENARIOS = {"default": {}, "noautocreate": {"auto.create.topics.enable": "false"}}
SUMMARY_ROW = re.compile(r"^\|\s*(\d{4}_\w+)\s*\|\s*(\w+)\s*\|", re.MULTILINE)
ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass(frozen=True)
class Case:
    """One run of the test runner: ``TESTS`` = the names' number, in ``scenario``; every name
    must be reported PASSED (and, with ``subtests``, at least one such sub-test must pass)."""
    names: tuple[str, ...]
    scenario: str = "default"
    subtests: str = ""
    broker: tuple[tuple[str, object], ...] = ()   # settings beyond BROKER and the scenario's

    @property
    def number(self) -> str:
        return self.names[0][:4]

    @property
    def id(self) -> str:
        return "+".join(self.names) + (f"[{self.subtests}]" if self.subtests else "")


def case(*names: str, scenario: str = "default", subtests: str = "", **broker) -> Case:
    """``broker``: settings with dots written as underscores (group_initial_rebalance_delay_ms)."""
    return Case(names, scenario, subtests,
                tuple((key.replace("_", "."), value) for key, value in broker.items()))


def admin(api: str) -> Case:
    """One admin API of 0081 (its sub-tests are named after the do_test_<API> function)."""
    return case("0081_admin", subtests=f"do_test_{api}")


COOPERATIVE = "0113_cooperative_rebalance"

# Pass today, and run in CI (about five minutes on two cores).
PASSING: list[Case] = [
    # produce and consume
    case("0001_multiobj"), case("0002_unkpart"), case("0003_msgmaxsize"), case("0005_order"),
    case("0007_autotopic"), case("0008_reqacks"),
    case("0011_produce_batch", subtests="partitioner"),
    case("0011_produce_batch", subtests="test_single_partition"),
    case("0011_produce_batch", subtests="per_message_partition_flag"),
    case("0011_produce_batch", subtests="record_fail"), case("0052_msg_timestamps"),
    case("0012_produce_consume"), case("0013_null_msgs"), case("0017_compression"),
    case("0021_rkt_destroy"), case("0022_consume_batch"), case("0036_partial_fetch"),
    case("0039_event_dr"), case("0041_fetch_max_bytes"), case("0048_partitioner"),
    case("0064_interceptors"), case("0065_yield"), case("0070_null_empty"), case("0073_headers"),
    case("0082_fetch_max_bytes"), case("0085_headers"),
    # offsets
    case("0015_offsets_seek"), case("0029_assign_offset"), case("0030_offset_commit"),
    case("0031_get_offsets"), case("0034_offset_reset"),
    case("0061_consumer_lag", subtests="without transactions"), case("0099_commit_metadata"),
    case("0130_store_offsets"), case("0140_commit_metadata"), case("0054_offset_time"),
    case("0137_barrier_batch_consume", subtests="do_test_consume_batch_store_offset"),
    # metadata and topics
    case("0016_client_swname"), case("0035_api_version"), case("0042_many_topics"),
    case("0053_stats"), case("0057_invalid_topic"), case("0063_clusterid"),
    case("0044_partition_cnt"), case("0069_consumer_add_parts"), case("0112_assign_unknown_part"),
    case("0045_subscribe_update_non_exist_and_partchange", scenario="noautocreate",
         subtests="do_test_non_exist_and_partchange"),
    # consumer groups
    case("0019_list_groups"), case("0020_destroy_hang"), case("0056_balanced_group_mt"),
    case("0060_op_prio"), case("0132_strategy_ordering"),
    # expects both consumers in the first generation (Kafka's default 3 s initial delay), so
    # that only the closing consumer is revoked; with no delay the second joins a generation
    # later and the first one's ordinary revoke commits successfully
    case("0118_commit_rebalance", group_initial_rebalance_delay_ms=3000),
    case(COOPERATIVE, subtests="a_assign"),
    case(COOPERATIVE, subtests="d_change_subscription_add_topic"),
    case(COOPERATIVE, subtests="e_change_subscription_remove_topic"),
    case(COOPERATIVE, subtests="f_assign_call_cooperative"),
    case(COOPERATIVE, subtests="g_incremental_assign_call_eager"),
    case(COOPERATIVE, subtests="h_delete_topic"),
    case(COOPERATIVE, subtests="j_delete_topic_no_rb_callback"),
    case(COOPERATIVE, subtests="m_unsubscribe_2"),
    case(COOPERATIVE, subtests="k_add_partition"),
    # counts rebalance callbacks expecting both members in the first generation, which Kafka's
    # default 3 s initial rebalance delay gives
    case(COOPERATIVE, subtests="l_unsubscribe", group_initial_rebalance_delay_ms=3000),
    # transactions
    case("0129_fetch_aborted_msgs"),
    case("0061_consumer_lag", subtests="with transactions"),
    case("0137_barrier_batch_consume", subtests="control_msgs"),
    # admin
    admin("unclean_destroy"), admin("DeleteTopics"), admin("DeleteGroups"),
    admin("DeleteConsumerGroupOffsets"), admin("AlterConsumerGroupOffsets"),
    admin("DescribeTopics"), admin("CreatePartitions"), admin("DeleteRecords"),
    admin("DescribeCluster"), admin("ListOffsets"), admin("CreateTopics"), admin("AlterConfigs"),
    admin("IncrementalAlterConfigs"), admin("DescribeConfigs"),
]

# Pass today, but left out of CI runs for time (4 s to 95 s each, about fifteen minutes
# together): run with LIBRDKAFKA_TESTS_ALL=1.
SLOW: list[Case] = [
    case("0014_reconsume_191"), case("0040_io_event"), case("0059_bsearch"),
    case("0067_empty_topic"),
    case("0083_cb_event"), case("0084_destroy_flags"), case("0086_purge_remote"),
    case("0090_idempotence"), case("0110_batch_size"), case("0123_connections_max_idle"),
    case("0127_fetch_queue_backoff"),
    case("0137_barrier_batch_consume", subtests="do_test_consume_batch_with"),
    case("0018_cgrp_term"), case("0026_consume_pause"), case("0033_regex_subscribe"),
    case("0038_performance"),
    case("0045_subscribe_update", "0045_resubscribe_with_regex", "0045_subscribe_many_updates"),
    case("0045_subscribe_update_topic_remove", scenario="noautocreate",
         subtests="do_test_topic_remove"),
    case("0050_subscribe_adds"), case("0051_assign_adds"), case("0089_max_poll_interval"),
    case("0091_max_poll_interval_timeout"), case("0093_holb_consumer"),
    case("0102_static_group_rebalance"), case("0114_sticky_partitioning"),
    case("0122_buffer_cleaning_after_rebalance"), case("0125_immediate_flush"),
    case(COOPERATIVE, subtests="b_subscribe_with_cb_test"),
    case(COOPERATIVE, subtests="c_subscribe_no_cb_test"),
    case(COOPERATIVE, subtests="i_delete_topic_2"),
    case(COOPERATIVE, subtests="n_wildcard"),
    case(COOPERATIVE, subtests="s_subscribe_when_rebalancing"),
    case(COOPERATIVE, subtests="t_max_poll_interval_exceeded"),
    case(COOPERATIVE, subtests="subscription_variation: 0"),
    case(COOPERATIVE, subtests="v_commit_during_rebalance"),
    case(COOPERATIVE, subtests="x_incremental_rebalances"),
    case("0137_barrier_batch_consume", subtests="do_test_consume_batch_eof_position"),
    admin("ListConsumerGroups"), admin("DescribeConsumerGroups"), admin("ListConsumerGroupOffsets"),
]

# Not run, with the reason (besides every broker-less/mock test, and the socket-emulation
# tests 0049 0068 0075 0076 0088 0094, which librdkafka's own quick CI run skips too).
OUT_OF_SCOPE: dict[str, str] = {
    "0028_long_topicnames, 0047_partial_buf_tmout": "librdkafka marks them known issues",
    "0055_producer_latency": "the runner skips it in CI mode (latency not reliable)",
    "0098_consumer_txn": "drives Kafka's Java client (the transactions themselves are served)",
    "0077_compaction": "needs log compaction of data topics (cleanup.policy=compact)",
    "0092_mixed_msgver": "the runner skips it for Kafka 4.0 (MsgVersion 1 was removed)",
    "0097_ssl_verify, 0126_oauthbearer_oidc, 0135_sasl_credentials, 0142_reauthentication":
        "SSL and SASL",
    "0109_auto_create_topics, 0115_producer_auth, 0119_consumer_auth":
        "ACLs (0109's variants without kafka-acls.sh pass)",
    "0081_admin[Acls, UserScramCredentials]": "ACLs and SASL/SCRAM",
    "0101_fetch_from_follower, 0103_transactions, 0107_topic_recreate, 0111_delay_create_topics":
        "replication factor 3: three brokers",
    "0113_cooperative_rebalance[o_java_interop]": "needs Kafka's Java client",
    "0170-0185 share consumer tests": "share groups (Kafka 4.2)",
}


def _params() -> list:
    slow = pytest.mark.skipif(not os.environ.get("LIBRDKAFKA_TESTS_ALL"),
                              reason="slow: set LIBRDKAFKA_TESTS_ALL=1 to run it")
    return ([pytest.param(c, id=c.id) for c in PASSING]
            + [pytest.param(c, id=c.id, marks=slow) for c in SLOW])


@pytest.fixture
def test_runner() -> Path:
    runner = BUILD / "tests" / "test-runner"
    if not os.access(runner, os.X_OK):
        missing(f"librdkafka's test runner is not built at {runner} (run {SETUP})")
    return runner


def kafka_path(tmp_path: Path) -> Path:
    """A KAFKA_PATH whose bin/kafka-topics.sh runs librdkafka_kafka_topics.py."""
    root = tmp_path / "kafka"
    (root / "bin").mkdir(parents=True)
    script = root / "bin" / "kafka-topics.sh"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{KAFKA_TOPICS}" "$@"\n')
    script.chmod(0o755)
    return root


def failure_report(output: str, broker_log: str) -> str:
    """The runner's failure blocks and last lines, and the broker's warnings and errors."""
    lines = output.splitlines()
    failures = [f"{line}\n  {lines[i + 1] if i + 1 < len(lines) else ''}"
                for i, line in enumerate(lines) if line.startswith("### Test ")]
    noteworthy = [line for line in broker_log.splitlines()
                  if re.search(r"WARNING|ERROR|Traceback|Error:", line)]
    return ("failures:\n" + "\n".join(failures[:10])
            + "\n--- test-runner output, last lines:\n" + "\n".join(lines[-25:])
            + "\n--- broker log, warnings and errors:\n" + "\n".join(noteworthy[-20:]))


@pytest.mark.parametrize("case", _params())
def test_librdkafka(case: Case, test_runner: Path, start_broker, tmp_path):
    broker = start_broker({**BROKER, **SCENARIOS[case.scenario], **dict(case.broker)})
    conf = tmp_path / "test.conf"
    conf.write_text(f"bootstrap.servers={broker.bootstrap}\n")
    workdir = tmp_path / "run"
    workdir.mkdir()
    (tmp_path / "src").symlink_to(BUILD / "src")   # 0053 reads ../src/statistics_schema.json
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("TEST", "SUBTESTS", "RDKAFKA_"))}
    env.update(TESTS=case.number, TEST_SCENARIO=case.scenario, TEST_KAFKA_VERSION="4.0.0",
               RDKAFKA_TEST_CONF=str(conf), CI="true", KAFKA_PATH=str(kafka_path(tmp_path)),
               BROKERS=broker.bootstrap,
               LD_LIBRARY_PATH=f"{BUILD / 'src'}:{BUILD / 'src-cpp'}")
    if case.subtests:
        env["SUBTESTS"] = case.subtests
    started = time.monotonic()
    try:
        run = subprocess.run([str(test_runner), "-p1", "-L", "-E"], cwd=workdir, env=env,
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, timeout=CASE_TIMEOUT_S)
        output, code = ANSI.sub("", run.stdout.decode(errors="replace")), run.returncode
    except subprocess.TimeoutExpired as e:
        output = ANSI.sub("", (e.stdout or b"").decode(errors="replace"))
        code = f"killed after {CASE_TIMEOUT_S}s"
    results = dict(SUMMARY_ROW.findall(output))
    report = failure_report(output, broker.log_text())
    took = time.monotonic() - started
    assert code == 0, f"{case.id}: test-runner exit {code} after {took:.0f}s\n{report}"
    for name in case.names:
        assert results.get(name) == "PASSED", f"{name}: {results.get(name, 'not run')}\n{report}"
    if case.subtests:
        passed = re.findall(rf"\[ [^\]]*{re.escape(case.subtests)}[^\]]*: PASS \(", output)
        assert passed, f"no sub-test matching {case.subtests!r} passed\n{report}"
