"""The ``groupbroker`` command line, run as a real subprocess."""

import subprocess
import sys

import pytest

from offsets_log.log import ShardLog
from offsets_log.records import offset_commit_record


def run(*args):
    return subprocess.run([sys.executable, "-m", "broker", *args], capture_output=True, text=True,
                          timeout=60)


def test_apis_lists_every_registered_api():
    out = run("apis")
    assert out.returncode == 0
    for name in ("JoinGroup", "SyncGroup", "Heartbeat", "OffsetCommit", "ApiVersions", "Fetch"):
        assert name in out.stdout


def test_apis_lists_exactly_what_api_versions_advertises(broker):
    """What ApiVersions advertises, from the dispatch table (not the codec's table)."""
    from kafka_client.admin import Connection
    conn = Connection("127.0.0.1", broker.port)
    advertised = dict(conn.versions)
    conn.close()
    listed = {}
    for line in run("apis").stdout.splitlines()[1:-1]:
        key, _name, versions, _flexible = line.split()
        listed[int(key)] = int(versions.split("-")[1])
    assert listed == advertised


def test_apis_shows_the_finalized_features_a_setting_chooses():
    assert run("apis").stdout.splitlines()[-1] == (
        "finalized features: group.version=1, share.version=1, streams.version=1, transaction.version=2, "
        "eligible.leader.replicas.version=1, metadata.version=30")
    older = run("apis", "-o", "groupbroker.feature.transaction.version=1").stdout.splitlines()[-1]
    assert "transaction.version=1," in older
    assert "transaction.version" not in run("apis", "-o", "groupbroker.feature.transaction.version=0").stdout
    bad = run("apis", "-o", "groupbroker.feature.transaction.version=3")
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.strip().endswith("groupbroker.feature.transaction.version=3: must be between 0 and 2")
    assert len(bad.stderr.strip().splitlines()) == 1


@pytest.fixture
def data_dir(tmp_path):
    log = ShardLog.for_shard(str(tmp_path), 37)
    log.append([offset_commit_record("mykafka-group_4", "orders", p, 100 + p, -1, "", 1_000)
                for p in range(3)], now_ms=1_000)
    log.sync()
    log.close()
    return tmp_path


def test_log_dump_prints_one_line_per_record(data_dir):
    out = run("log", "dump", str(data_dir))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 3
    assert all("shard=37" in line and "mykafka-group_4" in line for line in lines)
    assert "offset=102," in lines[2] and lines[2].startswith("shard=37 offset=2 ")


CONSUMER_GROUP_RECORDS = ("ConsumerGroupMetadata", "ConsumerGroupPartitionMetadata",
                          "ConsumerGroupMemberMetadata", "ConsumerGroupTargetAssignmentMetadata",
                          "ConsumerGroupTargetAssignmentMember", "ConsumerGroupCurrentMemberAssignment",
                          "ConsumerGroupRegularExpression")


def test_log_dump_prints_the_records_of_a_consumer_group(start_broker):
    """A confluent-kafka member (group.protocol=consumer, a regex subscription) joins, consumes
    and leaves, the group is deleted; `log dump` of the stopped broker's data dir shows every
    consumer-group record type (3-8, 16) and its tombstone, one readable line each."""
    import base64
    import re
    from topic_log.store import read_metadata
    from broker.testing.launcher import TEST_DEFAULTS
    from tests.support.confluent import AdminClient, consumer_protocol_member, create_topics

    b = start_broker(TEST_DEFAULTS)
    create_topics(b.bootstrap, ("dump-orders", 2))
    consumer = consumer_protocol_member(b.bootstrap, "dumped", ["^dump-.*"], "dumper", 2)
    try:
        member = consumer.memberid()
    finally:
        consumer.close()                                            # leaves: the member's tombstones
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    for future in admin.delete_consumer_groups(["dumped"], request_timeout=10).values():
        future.result(15)                                           # the group's tombstones
    del admin
    assert b.stop() == 0

    out = run("log", "dump", str(b.data_dir))
    assert out.returncode == 0, out.stderr
    lines = [line.split(" ", 3)[3] for line in out.stdout.splitlines() if "(group='dumped'" in line]
    kinds = {line.split("(", 1)[0] for line in lines}
    assert kinds == {*CONSUMER_GROUP_RECORDS, *(k + "Tombstone" for k in CONSUMER_GROUP_RECORDS)}, kinds
    topic_id, _ = read_metadata(str(b.data_dir / "dump-orders-0"))
    uuid = base64.urlsafe_b64encode(topic_id.bytes).rstrip(b"=").decode()      # as Kafka prints a Uuid
    assert len(uuid) == 22
    assert f"ConsumerGroupPartitionMetadata(group='dumped', topics=[dump-orders({uuid}):2 partitions])" in lines
    assert f"ConsumerGroupTargetAssignmentMember(group='dumped', member='{member}', " \
           f"topic_partitions=[dump-orders({uuid}):0,1])" in lines
    assert any(re.fullmatch(rf"ConsumerGroupCurrentMemberAssignment\(group='dumped', member='{re.escape(member)}', "
                            rf"member_epoch=\d+, previous_member_epoch=-?\d+, state=STABLE, "
                            rf"assigned_partitions=\[dump-orders\({uuid}\):0,1\], "
                            rf"partitions_pending_revocation=\[\]\)", line) for line in lines), lines
    assert any(line.startswith(f"ConsumerGroupMemberMetadata(group='dumped', member='{member}', instance_id=None, ")
               and "client_id='dumper'" in line and "subscribed_topic_regex='" in line for line in lines), lines
    assert any(re.fullmatch(r"ConsumerGroupRegularExpression\(group='dumped', regular_expression='.*\^dump-\.\*.*', "
                            r"topics=\['dump-orders'\], version=\d+, timestamp=\d+\)", line) for line in lines), lines
    assert "ConsumerGroupMetadataTombstone(group='dumped')" in lines
    assert f"ConsumerGroupCurrentMemberAssignmentTombstone(group='dumped', member='{member}')" in lines


def test_log_verify_passes_a_sound_dir_and_names_a_flipped_byte(data_dir):
    assert run("log", "verify", str(data_dir)).returncode == 0
    segment = data_dir / "__consumer_offsets-37" / ("0" * 20 + ".log")
    raw = bytearray(segment.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    segment.write_bytes(bytes(raw))
    out = run("log", "verify", str(data_dir), "--shard", "37")
    assert out.returncode == 1
    assert "shard 37" in out.stdout and ".log@" in out.stdout


def test_log_compact_keeps_latest_per_key(data_dir):
    log = ShardLog.for_shard(str(data_dir), 37, segment_bytes=1)     # every append rolls
    log.append([offset_commit_record("mykafka-group_4", "orders", 0, 500, -1, "", 2_000)], 2_000)
    log.append([offset_commit_record("mykafka-group_4", "orders", 1, 501, -1, "", 2_000)], 2_000)
    log.sync()
    log.close()
    assert run("log", "compact", str(data_dir)).returncode == 0
    dumped = run("log", "dump", str(data_dir)).stdout
    assert "offset=500" in dumped and "offset=100," not in dumped


def test_log_verify_checks_topic_partitions_and_names_partition_segment_and_byte(tmp_path):
    from topic_log import TopicStore
    from tests.unit.topic_log.test_batches import batch
    store = TopicStore(tmp_path, segment_bytes=1)                    # every batch its own segment
    store.create_topic("orders", 2)
    for i in range(3):
        store.partition("orders", 1).append(batch([b"v%d" % i]), 0)
    store.close()
    assert run("log", "verify", str(tmp_path)).returncode == 0
    oldest = tmp_path / "orders-1" / ("0" * 20 + ".log")
    raw = bytearray(oldest.read_bytes())
    raw[-3] ^= 0x10                                                  # a record byte: bad CRC
    oldest.write_bytes(bytes(raw))
    out = run("log", "verify", str(tmp_path))
    assert out.returncode == 1
    assert out.stdout.splitlines() == [
        f"partition orders-1: {'0' * 20}.log@0: crc mismatch", "1 problem(s)"]


def test_log_verify_reports_a_shard_folder_that_is_a_file(data_dir):
    (data_dir / "__consumer_offsets-3").write_text("not a directory")
    out = run("log", "verify", str(data_dir))
    assert out.returncode == 1
    assert out.stdout.startswith("shard 3: __consumer_offsets-3@0: not a readable directory")


LOADED_AFTER = """
import sys
from broker.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
sys.stderr.write("\\nLOADED " + " ".join(sorted(sys.modules)) + "\\n")
"""


@pytest.mark.parametrize("argv", [("groups", "--help"), ("faults", "--help"),
                                  ("groups", "--bootstrap-server", "127.0.0.1:1", "--list")])
def test_socket_commands_never_load_trio_or_the_server(argv):
    """``groupbroker groups`` and ``faults`` are plain socket clients: a user's shell waits on
    neither trio nor the server's imports (the list fails to connect, after its imports)."""
    out = subprocess.run([sys.executable, "-c", LOADED_AFTER, *argv], capture_output=True,
                         text=True, timeout=60)
    loaded = out.stderr.rpartition("LOADED ")[2].split()
    assert "broker.cli" in loaded
    assert [m for m in loaded if m == "trio" or m.startswith(("trio.", "broker.server"))] == []


def test_serve_on_a_port_in_use_says_so_and_exits_1(tmp_path):
    import socket
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    try:
        out = subprocess.run([sys.executable, "-m", "broker", "serve", "--port", str(port),
                              "--data-dir", str(tmp_path)], capture_output=True, text=True, timeout=30)
    finally:
        taken.close()
    assert out.returncode == 1 and out.stdout == ""
    assert f"cannot listen on 127.0.0.1:{port}" in out.stderr and "in use" in out.stderr
