"""``groupbroker serve`` on a large data dir, as a real process on a real socket: it says it
listens and answers at once, while its coordinator shards load in worker threads; a group
whose shard is still loading gets COORDINATOR_LOAD_IN_PROGRESS (which clients retry, as they
do while Kafka loads a coordinator) until that shard has loaded, then its offsets."""

import subprocess
import sys
import time

from kafka_client.blocking import BlockingClient
from broker.testing.launcher import SHARDS_LOADED, BrokerProcess
from coordinator.routing import shard_for
from offsets_log.log import ShardLog
from offsets_log.records import offset_commit_record
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.messages import REQUESTS

OffsetFetch = REQUESTS[ApiKey.OFFSET_FETCH].cls
SLOW, FAST = "slow-group", "fast-group"
#: enough records that the slow group's shard takes seconds to replay, against the few
#: milliseconds from the broker's listening line to its first answers
RECORDS = 50_000
PARTITIONS = 10


def big_shard(data_dir) -> None:
    """RECORDS offset commits of SLOW (10 partitions, each committed again and again; the
    last commit of partition p is offset 1000 + p), written directly into its shard's log."""
    log = ShardLog.for_shard(str(data_dir), shard_for(SLOW, 50))
    rounds = RECORDS // PARTITIONS
    records = [offset_commit_record(SLOW, "orders", p, p + (1000 if r == rounds - 1 else r), 0, "", 1_000)
               for r in range(rounds) for p in range(PARTITIONS)]
    for i in range(0, len(records), 10_000):
        log.append(records[i:i + 10_000], now_ms=1_000)
    log.sync()
    log.close()


def fetch(client: BlockingClient, group: str):
    answer = client.call(ApiKey.OFFSET_FETCH, 8, OffsetFetch(groups=(
        OffsetFetch.OffsetFetchRequestGroup(group_id=group, topics=None),)))
    return answer.groups[0]


def test_a_large_data_dir_answers_at_once_and_its_groups_once_their_shard_loads(tmp_path):
    assert shard_for(SLOW, 50) != shard_for(FAST, 50)
    big_shard(tmp_path / "data")
    broker = BrokerProcess(tmp_path / "data", tmp_path / "broker.log")
    try:
        broker.start(loaded=False)                # the line, then ApiVersions answered
        assert not SHARDS_LOADED.search(broker.log_since_start())
        client = BlockingClient("127.0.0.1", broker.port)
        try:
            assert fetch(client, SLOW).error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
            while (fast := fetch(client, FAST)).error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
                time.sleep(0.01)                  # an empty shard loads at once ...
            assert fast.error_code == ErrorCode.NONE and fast.topics == ()
            # ... and the big one is still loading
            assert fetch(client, SLOW).error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
            deadline = time.monotonic() + 120
            while (slow := fetch(client, SLOW)).error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        finally:
            client.close()
        assert slow.error_code == ErrorCode.NONE
        assert [(p.partition_index, p.committed_offset) for t in slow.topics for p in t.partitions] == [
            (p, 1000 + p) for p in range(PARTITIONS)]
        broker.wait_for_log(SHARDS_LOADED.pattern, text=broker.log_since_start)
        assert broker.stop() == 0
    finally:
        broker.kill()


def test_serve_loads_only_the_serve_command():
    """``groupbroker serve`` imports neither the other commands (the fault client, the log
    tools, the groups tool, Spark's report) nor the version lookup."""
    out = subprocess.run([sys.executable, "-c", "import sys\nfrom broker.cli import main\n"
                          "try:\n    main(['serve', '--help'])\nexcept SystemExit:\n    pass\n"
                          "sys.stderr.write('LOADED ' + ' '.join(sorted(sys.modules)))"],
                         capture_output=True, text=True, timeout=60)
    loaded = out.stderr.rpartition("LOADED ")[2].split()
    assert "broker.cli.serve" in loaded
    assert [m for m in loaded if m.startswith(("broker.cli.", "pipeline", "importlib.metadata"))
            and m != "broker.cli.serve"] == []
