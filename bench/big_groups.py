"""One big group on groupbroker and on Apache Kafka 4.3.1, in the same run.

N members (default 100, 300 and 1,000), each a raw client on its own connection, all driven
from this process by trio tasks:

* **classic**: JoinGroup v9 (the MEMBER_ID_REQUIRED round trip included), the leader computes
  a range assignment of ``--partitions`` (default 10,000) partitions and sends it in its
  SyncGroup, every member heartbeats every ``--heartbeat-ms`` and rejoins when told to;
* **consumer** (KIP-848): ConsumerGroupHeartbeat v1 with a member id of its own, subscribed to
  a topic of 2N partitions (the brokers' uniform assignor), owning what it was last given and
  saying so at once when that changes, else every heartbeat interval.

For each it measures the time until every member holds its final assignment (all members
in the same generation or epoch, every partition held exactly once, then nothing changes
for two heartbeat intervals; the time is when the last member got its part), after a cold
start and again after one member leaves. Both brokers run with Kafka's defaults except the
heartbeat interval of consumer groups (``group.consumer.heartbeat.interval.ms`` and its
minimum, ``--heartbeat-ms``); the classic group's initial rebalance delay is Kafka's 3 s.
Ours/Kafka is the ratio (lower is better). Run:
``.venv/bin/python bench/big_groups.py [--members 100,300,1000] [--json FILE]``.
Only 127.0.0.1 is ever used.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sys
import time
import uuid
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from apache_kafka.process import KafkaProcess  # noqa: E402
from broker.testing.launcher import BrokerProcess  # noqa: E402
from protocol import DATA, REQUESTS  # noqa: E402
from protocol.api_keys import ApiKey  # noqa: E402
from protocol.errors import ErrorCode as E  # noqa: E402
from protocol.payloads import decode_payload, encode_payload  # noqa: E402
from tests.support.trio_client import TrioClient  # noqa: E402

JOIN, SYNC, HEARTBEAT, LEAVE = (REQUESTS[k].cls for k in (ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP,
                                                          ApiKey.HEARTBEAT, ApiKey.LEAVE_GROUP))
CGH = REQUESTS[ApiKey.CONSUMER_GROUP_HEARTBEAT].cls
TOPIC = "big-groups"


def log(msg: str) -> None:
    sys.stderr.write(f"[big_groups {time.strftime('%H:%M:%S')}] {msg}\n")
    sys.stderr.flush()


class Watch:
    """What the members hold, and when the last of them got its part."""

    def __init__(self, members: int, partitions: int):
        self.partitions, self.held = partitions, [None] * members     # (generation, partitions)
        self.changed = [0.0] * members
        self.last_change = time.perf_counter()
        self.leaving: set[int] = set()

    def got(self, i: int, generation: int, parts: frozenset) -> None:
        if self.held[i] is None or self.held[i][1] != parts or self.held[i][0] != generation:
            now = time.perf_counter()
            self.held[i], self.changed[i], self.last_change = (generation, parts), now, now

    def settled(self) -> float | None:
        """When the last member got its part, if every member holds one of the same generation
        and every partition is held once; else None."""
        active = [h for i, h in enumerate(self.held) if i not in self.leaving]
        if any(h is None for h in active) or len({h[0] for h in active}) != 1:
            return None
        if sum(len(h[1]) for h in active) != self.partitions or \
                len(frozenset().union(*(h[1] for h in active))) != self.partitions:
            return None
        return max(t for i, t in enumerate(self.changed) if i not in self.leaving)


async def until_settled(watch: Watch, quiet_s: float, timeout_s: float, since: float) -> float:
    deadline = since + timeout_s
    while True:
        await trio.sleep(0.02)
        at = watch.settled()
        if at is not None and time.perf_counter() - watch.last_change >= quiet_s:
            return at - since
        if time.perf_counter() > deadline:
            raise RuntimeError(f"not settled after {timeout_s:.0f}s")


# --- classic ------------------------------------------------------------------------------

def subscription() -> bytes:
    sub = DATA["ConsumerProtocolSubscription"]
    return encode_payload(sub, 0, sub.cls(topics=(TOPIC,), user_data=None))


def range_assignment(members: list[str], partitions: int) -> list[tuple[str, bytes]]:
    """Kafka's RangeAssignor for one topic: members sorted, the first ``partitions % n`` get one more."""
    a = DATA["ConsumerProtocolAssignment"]
    n, out, start = len(members), [], 0
    for k, member in enumerate(sorted(members)):
        count = partitions // n + (1 if k < partitions % n else 0)
        tp = a.cls.TopicPartition(topic=TOPIC, partitions=tuple(range(start, start + count)))
        out.append((member, encode_payload(a, 0, a.cls(assigned_partitions=(tp,), user_data=None))))
        start += count
    return out


def assigned(data: bytes) -> frozenset:
    if not data:
        return frozenset()
    _, a = decode_payload(DATA["ConsumerProtocolAssignment"], data)
    return frozenset(p for tp in a.assigned_partitions for p in tp.partitions)


class ClassicMember:
    def __init__(self, i: int, client: TrioClient, group: str, watch: Watch, partitions: int, heartbeat_s: float):
        self.i, self.client, self.group, self.watch = i, client, group, watch
        self.partitions, self.heartbeat_s = partitions, heartbeat_s
        self.member_id, self.generation, self.leave = "", -1, trio.Event()

    async def join(self) -> None:
        while True:
            body = JOIN(group_id=self.group, session_timeout_ms=45_000, rebalance_timeout_ms=300_000,
                        member_id=self.member_id, group_instance_id=None, protocol_type="consumer",
                        protocols=(JOIN.JoinGroupRequestProtocol(name="range", metadata=subscription()),),
                        reason=None)
            answer = await self.client.call(ApiKey.JOIN_GROUP, 9, body)
            if answer.error_code == E.MEMBER_ID_REQUIRED:
                self.member_id = answer.member_id
                continue
            if answer.error_code == E.UNKNOWN_MEMBER_ID:
                self.member_id = ""
                continue
            if answer.error_code != E.NONE:
                raise RuntimeError(f"JoinGroup: {E(answer.error_code).name}")
            self.generation = answer.generation_id
            plan = ()
            if answer.leader == self.member_id:
                plan = range_assignment([m.member_id for m in answer.members], self.partitions)
            sync = await self.client.call(ApiKey.SYNC_GROUP, 5, SYNC(
                group_id=self.group, generation_id=self.generation, member_id=self.member_id,
                group_instance_id=None, protocol_type="consumer", protocol_name="range",
                assignments=tuple(SYNC.SyncGroupRequestAssignment(member_id=m, assignment=a) for m, a in plan)))
            if sync.error_code == E.NONE:
                self.watch.got(self.i, self.generation, assigned(sync.assignment))
                return
            if sync.error_code not in (E.REBALANCE_IN_PROGRESS, E.ILLEGAL_GENERATION):
                raise RuntimeError(f"SyncGroup: {E(sync.error_code).name}")

    async def run(self) -> None:
        await self.join()
        first = True
        while not self.leave.is_set():
            # as real members' timers, the heartbeats of different members are not in step
            with trio.move_on_after(self.heartbeat_s * (random.random() if first else 1)):
                await self.leave.wait()
            first = False
            if self.leave.is_set():
                break
            answer = await self.client.call(ApiKey.HEARTBEAT, 4, HEARTBEAT(
                group_id=self.group, generation_id=self.generation, member_id=self.member_id,
                group_instance_id=None))
            if answer.error_code in (E.REBALANCE_IN_PROGRESS, E.ILLEGAL_GENERATION, E.UNKNOWN_MEMBER_ID):
                if answer.error_code == E.UNKNOWN_MEMBER_ID:
                    self.member_id = ""
                await self.join()
                first = True
        await self.client.call(ApiKey.LEAVE_GROUP, 5, LEAVE(group_id=self.group, members=(
            LEAVE.MemberIdentity(member_id=self.member_id, group_instance_id=None, reason=None),)))


# --- consumer (KIP-848) -------------------------------------------------------------------

class ConsumerMember:
    def __init__(self, i: int, client: TrioClient, group: str, watch: Watch):
        self.i, self.client, self.group, self.watch = i, client, group, watch
        self.member_id, self.epoch, self.owned, self.leave = str(uuid.uuid4()), 0, {}, trio.Event()

    async def beat(self, first: bool = False):
        body = CGH(group_id=self.group, member_id=self.member_id, member_epoch=self.epoch, instance_id=None,
                   rebalance_timeout_ms=300_000 if first else -1,
                   subscribed_topic_names=(TOPIC,) if first else None,
                   topic_partitions=tuple(CGH.TopicPartitions(topic_id=t, partitions=tuple(sorted(ps)))
                                          for t, ps in self.owned.items() if ps))
        answer = await self.client.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, body)
        if answer.error_code != E.NONE:
            raise RuntimeError(f"ConsumerGroupHeartbeat: {E(answer.error_code).name} {answer.error_message}")
        self.epoch = answer.member_epoch
        changed = False
        if answer.assignment is not None:
            owned = {tp.topic_id: frozenset(tp.partitions) for tp in answer.assignment.topic_partitions}
            changed, self.owned = owned != self.owned, owned
        self.watch.got(self.i, self.epoch, frozenset().union(*self.owned.values()) if self.owned else frozenset())
        return answer.heartbeat_interval_ms / 1000, changed

    async def run(self) -> None:
        interval, changed = await self.beat(first=True)
        interval *= random.random()          # members' heartbeats are not in step
        while not self.leave.is_set():
            if not changed:
                with trio.move_on_after(interval):
                    await self.leave.wait()
                if self.leave.is_set():
                    break
            interval, changed = await self.beat()
        self.epoch = -1
        await self.client.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, CGH(
            group_id=self.group, member_id=self.member_id, member_epoch=-1, instance_id=None,
            rebalance_timeout_ms=-1, subscribed_topic_names=None, topic_partitions=None))


async def create_topic(port: int, partitions: int) -> None:
    ct = REQUESTS[ApiKey.CREATE_TOPICS].cls
    client = await TrioClient.connect(port, client_id="big-groups")
    answer = await client.call(ApiKey.CREATE_TOPICS, 5, ct(topics=(ct.CreatableTopic(
        name=TOPIC, num_partitions=partitions, replication_factor=1, assignments=(), configs=()),),
        timeout_ms=120_000, validate_only=False))
    if answer.topics[0].error_code not in (E.NONE, E.TOPIC_ALREADY_EXISTS):
        raise RuntimeError(f"CreateTopics: {E(answer.topics[0].error_code).name}")
    await client.aclose()


async def one_group(port: int, kind: str, n: int, partitions: int, heartbeat_s: float,
                    timeout_s: float) -> dict[str, float]:
    """Seconds until settled: after a cold start, then after one member leaves."""
    group = f"big-{kind}-{n}-{uuid.uuid4().hex[:6]}"
    watch = Watch(n, partitions)
    clients = []
    for _ in range(n):
        clients.append(await TrioClient.connect(port, client_id="big-groups"))
    if kind == "classic":
        members = [ClassicMember(i, c, group, watch, partitions, heartbeat_s) for i, c in enumerate(clients)]
    else:
        members = [ConsumerMember(i, c, group, watch) for i, c in enumerate(clients)]
    quiet = 2 * heartbeat_s
    async with trio.open_nursery() as nursery:
        started = time.perf_counter()
        for m in members:
            nursery.start_soon(m.run)
        cold = await until_settled(watch, quiet, timeout_s, started)
        leaver = members[-1]
        watch.leaving.add(leaver.i)
        left = time.perf_counter()
        leaver.leave.set()
        after_leave = await until_settled(watch, quiet, timeout_s, left)
        for m in members:
            m.leave.set()
    for c in clients:
        await c.aclose()
    return {"cold": cold, "after_leave": after_leave}


def raise_fd_limit(need: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(need, hard), hard))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--members", default="100,300,1000", help="group sizes (comma-separated)")
    parser.add_argument("--partitions", type=int, default=10_000, help="partitions a classic leader assigns")
    parser.add_argument("--heartbeat-ms", type=int, default=500)
    parser.add_argument("--kinds", default="classic,consumer")
    parser.add_argument("--brokers", default="groupbroker,kafka")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    sizes = [int(s) for s in args.members.split(",")]
    raise_fd_limit(4 * max(sizes) + 256)
    settings = {"group.consumer.heartbeat.interval.ms": str(args.heartbeat_ms),
                "group.consumer.min.heartbeat.interval.ms": str(args.heartbeat_ms)}
    results: dict = {}
    import tempfile
    with tempfile.TemporaryDirectory(prefix="bench-big-groups-") as work:
        for name in args.brokers.split(","):
            if name == "kafka":
                broker = KafkaProcess(Path(work) / "kafka", settings).start()
                port = int(broker.bootstrap_servers.rpartition(":")[2])
            else:
                (Path(work) / "ours").mkdir()
                broker = BrokerProcess(Path(work) / "ours" / "data", Path(work) / "ours" / "broker.log",
                                       settings).start()
                port = broker.port
            try:
                for kind in args.kinds.split(","):
                    for n in sizes:
                        parts = args.partitions if kind == "classic" else 2 * n
                        if kind == "consumer":
                            global TOPIC
                            TOPIC = f"big-groups-{n}"
                            trio.run(create_topic, port, parts)
                        took = trio.run(one_group, port, kind, n, parts, args.heartbeat_ms / 1000, args.timeout)
                        results.setdefault(kind, {}).setdefault(n, {})[name] = took
                        log(f"{name} {kind} {n} members: cold {took['cold']:.2f}s, "
                            f"after one leaves {took['after_leave']:.2f}s")
            finally:
                broker.stop()
    out = sys.stdout
    out.write(f"\nseconds until every member holds its final assignment (heartbeat {args.heartbeat_ms} ms; "
              f"classic: {args.partitions:,} partitions; consumer: 2 partitions per member)\n")
    out.write(f"{'group':<10} {'members':>7}  {'case':<12} {'groupbroker':>11} {'Kafka 4.3.1':>11} {'ours/Kafka':>10}\n")
    for kind, by_n in results.items():
        for n, by_broker in by_n.items():
            for case in ("cold", "after_leave"):
                ours, kafka = (by_broker.get(b, {}).get(case) for b in ("groupbroker", "kafka"))
                ratio = f"{ours / kafka:10.2f}" if ours and kafka else f"{'-':>10}"
                out.write(f"{kind:<10} {n:>7}  {case:<12} {ours or float('nan'):>11.2f} "
                          f"{kafka or float('nan'):>11.2f} {ratio}\n")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
