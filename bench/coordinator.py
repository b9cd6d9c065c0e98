"""Coordinator operations per second in-process, no I/O: heartbeats and 10-partition commits.

A Stable group of 100 members lives on its shard; the loop calls ``Shard.handle`` directly
and counts answered requests. Run: ``.venv/bin/python bench/coordinator.py``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from coordinator.actions import Reply, RequestContext  # noqa: E402
from coordinator.routing import shard_for  # noqa: E402
from coordinator.shard import Shard  # noqa: E402
from protocol import DATA, REQUESTS  # noqa: E402
from protocol.api_keys import ApiKey  # noqa: E402
from protocol.payloads import encode_payload  # noqa: E402

GROUP = "bench-group"
MEMBERS = 100


def stable_group() -> tuple[Shard, list[str], int, int]:
    shard = Shard(shard_for(GROUP))
    join, sync = REQUESTS[ApiKey.JOIN_GROUP].cls, REQUESTS[ApiKey.SYNC_GROUP].cls
    subscription = DATA["ConsumerProtocolSubscription"]
    metadata = encode_payload(subscription, 0, subscription.cls(topics=("orders",), user_data=None))
    proto = join.JoinGroupRequestProtocol(name="range", metadata=metadata)
    now = 0
    for i in range(MEMBERS):
        shard.handle(now, RequestContext(i, ApiKey.JOIN_GROUP, 3, f"c{i}"),
                     join(group_id=GROUP, session_timeout_ms=45_000, rebalance_timeout_ms=60_000,
                          member_id="", protocol_type="consumer", protocols=(proto,)))
    group = shard.groups[GROUP]
    while group.state.value == "PreparingRebalance":      # initial delay, extended once
        now = shard.next_deadline()
        shard.tick(now)
    members = list(group.members)
    for i, member_id in enumerate(members):
        shard.handle(now, RequestContext(("s", i), ApiKey.SYNC_GROUP, 3),
                     sync(group_id=GROUP, generation_id=group.generation, member_id=member_id))
    assert group.state.value == "Stable", group.state
    return shard, members, group.generation, now


def rate(label: str, fn, seconds: float = 2.0) -> None:
    n = 0
    start = time.perf_counter()
    stop = start + seconds
    while time.perf_counter() < stop:
        for _ in range(1000):
            fn(n)
            n += 1
    print(f"{label:<44} {n / (time.perf_counter() - start):>12,.0f} ops/s")


def main() -> None:
    shard, members, generation, now = stable_group()
    hb = REQUESTS[ApiKey.HEARTBEAT].cls
    heartbeats = [hb(group_id=GROUP, generation_id=generation, member_id=m) for m in members]

    def heartbeat(n: int) -> None:
        (reply,) = shard.handle(now, RequestContext(n, ApiKey.HEARTBEAT, 4), heartbeats[n % MEMBERS]).actions
        assert isinstance(reply, Reply) and reply.response.error_code == 0

    oc = REQUESTS[ApiKey.OFFSET_COMMIT].cls
    topic = oc.OffsetCommitRequestTopic
    commits = [oc(group_id=GROUP, generation_id_or_member_epoch=generation, member_id=m, topics=(
        topic(name="orders", partitions=tuple(topic.OffsetCommitRequestPartition(
            partition_index=p, committed_offset=1000 + p, committed_metadata="") for p in range(10))),))
        for m in members]

    def commit(n: int) -> None:
        actions = shard.handle(now, RequestContext(n, ApiKey.OFFSET_COMMIT, 8), commits[n % MEMBERS]).actions
        assert len(actions) == 2

    print(f"{'operation (group of 100 members, Stable)':<44} {'rate':>12}")
    rate("Heartbeat v4", heartbeat)
    rate("OffsetCommit v8, 10 partitions (records built)", commit)


if __name__ == "__main__":
    main()
