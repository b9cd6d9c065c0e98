"""Wire-protocol load generator for bench/e2e.py (runs in its own process, prints one JSON line).

It speaks Kafka through the project's one client: each connection is a
``kafka_client.blocking.BlockingClient`` for the setup, then its socket goes non-blocking and
a plain ``select.epoll`` loop drives its ``protocol.client.ClientSession`` (requests encoded
once and re-sent with fresh correlation ids), so the client costs as little CPU per request as
Python allows. Every response is decoded and its correlation id and error codes checked.

Modes::

    loadgen.py rate   --port P --api heartbeat|commit --conns N --inflight K --seconds S --topic T
    loadgen.py groups --port P --groups G --members M --lanes L

``rate``: heartbeats come from one single-member Stable group per connection (JoinGroup v3 +
SyncGroup v3 first); commits are simple commits (generation -1, member id "") of 10
partitions to one member-less group per connection. Each connection keeps K requests in
flight (K=1: serial) for S seconds after a short warm-up; the answer counts responses.

``groups``: builds G groups of M members: a *lane* is M connections and builds one group at a
time (member i of the lane's groups on connection i, so a parked JoinGroup only holds its own
group's members); L lanes run at once. Members join with JoinGroup v3 (no MEMBER_ID_REQUIRED
round trip); when the leader's answer lists all M members, only the leader syncs. Otherwise
(the join phase closed before every member arrived) the lane behaves like real clients until
the group settles: sync, heartbeat, rejoin on REBALANCE_IN_PROGRESS.

Only ever connects to 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import select
import socket
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kafka_client.blocking import BlockingClient  # noqa: E402
from protocol import DATA, REQUESTS  # noqa: E402
from protocol.api_keys import ApiKey  # noqa: E402
from protocol.errors import ErrorCode  # noqa: E402
from protocol.payloads import encode_payload  # noqa: E402

HOST = "127.0.0.1"
JOIN, SYNC, HEARTBEAT, COMMIT = ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT, ApiKey.OFFSET_COMMIT
JOIN_V, SYNC_V, HB_V, COMMIT_V = 3, 3, 4, 8
SESSION_MS = 300_000          # nothing may expire while a run lasts (kfake allows at most 5 min)
REBALANCE_MS = 300_000


def subscription(topic: str) -> bytes:
    sub = DATA["ConsumerProtocolSubscription"]
    return encode_payload(sub, 0, sub.cls(topics=(topic,), user_data=None))


def assignment(topic: str, partitions) -> bytes:
    a = DATA["ConsumerProtocolAssignment"]
    tp = a.cls.TopicPartition(topic=topic, partitions=tuple(partitions))
    return encode_payload(a, 0, a.cls(assigned_partitions=(tp,), user_data=None))


def join_body(group: str, member_id: str, topic: str):
    join = REQUESTS[JOIN].cls
    proto = join.JoinGroupRequestProtocol(name="range", metadata=subscription(topic))
    return join(group_id=group, session_timeout_ms=SESSION_MS, rebalance_timeout_ms=REBALANCE_MS,
                member_id=member_id, protocol_type="consumer", protocols=(proto,))


def sync_body(group: str, generation: int, member_id: str, assignments=()):
    sync = REQUESTS[SYNC].cls
    return sync(group_id=group, generation_id=generation, member_id=member_id,
                assignments=tuple(sync.SyncGroupRequestAssignment(member_id=m, assignment=a)
                                  for m, a in assignments))


def heartbeat_body(group: str, generation: int, member_id: str):
    return REQUESTS[HEARTBEAT].cls(group_id=group, generation_id=generation, member_id=member_id)


def commit_body(group: str, topic: str, offset: int, partitions: int = 10):
    oc = REQUESTS[COMMIT].cls
    t = oc.OffsetCommitRequestTopic
    parts = tuple(t.OffsetCommitRequestPartition(partition_index=p, committed_offset=offset + p,
                                                 committed_metadata="") for p in range(partitions))
    return oc(group_id=group, generation_id_or_member_epoch=-1, member_id="",
              topics=(t(name=topic, partitions=parts),))


class Conn:
    """One connection: the shared client for the setup, then its session and a send buffer
    for the epoll loop."""

    __slots__ = ("client", "session", "sock", "out", "fd", "sent")

    def __init__(self, port: int):
        self.client = BlockingClient(HOST, port, client_id="loadgen")
        self.session = self.client.session
        self.sock = self.client.sock
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.out = bytearray()
        self.fd = self.sock.fileno()
        self.sent = 0                 # requests sent from templates (which template is next)


def flush(ep, c) -> None:
    """Send what the connection has queued; wait for EPOLLOUT if the socket is full."""
    while c.out:
        try:
            n = c.sock.send(c.out)
        except BlockingIOError:
            ep.modify(c.fd, select.EPOLLIN | select.EPOLLOUT)
            return
        del c.out[:n]
    ep.modify(c.fd, select.EPOLLIN)


def read_responses(c):
    """(api key, decoded response) of every answer that one read of the connection completes."""
    data = c.sock.recv(1 << 18)
    if not data:
        raise ConnectionError("broker closed a connection")
    c.session.feed(data)
    while (awaited := c.session.awaited) is not None and (answer := c.session.next_response()) is not None:
        yield awaited[1], answer[1]


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


# --- rate ----------------------------------------------------------------------------------

def setup_heartbeats(conns, port: int, tag: str, topic: str):
    """One single-member Stable group per connection; returns each connection's template."""
    templates = []
    # all joins first (they park until the initial delay is over), then all syncs
    for i, c in enumerate(conns):
        c.client.send(JOIN, JOIN_V, join_body(f"{tag}-hb-{i}", "", topic))
    joined = []
    for c in conns:
        r = c.client.receive()
        assert r.error_code == 0 and r.leader == r.member_id, r
        joined.append((r.generation_id, r.member_id))
    for i, (c, (gen, member)) in enumerate(zip(conns, joined)):
        r = c.client.call(SYNC, SYNC_V, sync_body(f"{tag}-hb-{i}", gen, member,
                                                  [(member, assignment(topic, range(60)))]))
        assert r.error_code == 0, r
        templates.append([c.session.template(HEARTBEAT, HB_V, heartbeat_body(f"{tag}-hb-{i}", gen, member))])
    return templates


def setup_commits(conns, tag: str, topic: str):
    return [[c.session.template(COMMIT, COMMIT_V, commit_body(f"{tag}-oc-{i}", topic, 1000 * k))
             for k in range(64)] for i, c in enumerate(conns)]


def check(api_key: int, response) -> int:
    """Number of errors in one response."""
    if api_key == HEARTBEAT:
        return response.error_code != 0
    return sum(p.error_code != 0 for t in response.topics for p in t.partitions)


def run_rate(args) -> dict:
    api = HEARTBEAT if args.api == "heartbeat" else COMMIT
    conns = [Conn(args.port) for _ in range(args.conns)]
    tag = f"{args.tag}-{os.getpid()}"
    if api == HEARTBEAT:
        templates = setup_heartbeats(conns, args.port, tag, args.topic)
    else:
        templates = setup_commits(conns, tag, args.topic)
    for c in conns:
        c.sock.setblocking(False)
    ep = select.epoll()
    by_fd = {}
    for i, c in enumerate(conns):
        ep.register(c.fd, select.EPOLLIN)
        by_fd[c.fd] = (c, templates[i])

    def fill(c, tmpl, n):
        chunks = []
        for _ in range(n):
            chunks.append(c.session.stamp(tmpl[c.sent % len(tmpl)])[1])
            c.sent += 1
        c.out += b"".join(chunks)
        flush(ep, c)


    start = time.perf_counter()
    warm_end = start + args.warmup
    stop = warm_end + args.seconds
    counted = errors = 0
    first_error = None
    for c in conns:
        fill(c, by_fd[c.fd][1], args.inflight)
    cpu0 = None
    measuring = False
    t_measure = None
    draining = False
    outstanding = len(conns) * args.inflight
    while outstanding:
        now = time.perf_counter()
        if not measuring and now >= warm_end:
            measuring, t_measure, cpu0, counted = True, now, cpu_seconds(), 0
        if not draining and now >= stop:
            draining = True
            t_end, cpu1, final = now, cpu_seconds(), counted
            drain_deadline = now + 5
        if draining and now > drain_deadline:
            break
        for fd, ev in ep.poll(0.05):
            c, tmpl = by_fd[fd]
            if ev & select.EPOLLOUT:
                flush(ep, c)
            if not ev & (select.EPOLLIN | select.EPOLLHUP | select.EPOLLERR):
                continue
            got = 0
            for _, response in read_responses(c):
                bad = check(api, response)
                if bad:
                    errors += 1
                    first_error = first_error or repr(response)[:300]
                got += 1
            counted += got
            outstanding -= got
            if got and not draining:
                fill(c, tmpl, got)
                outstanding += got
    if not draining:
        t_end, cpu1, final = time.perf_counter(), cpu_seconds(), counted
    for c in conns:
        c.sock.close()
    elapsed = t_end - t_measure
    return {"requests": final, "seconds": elapsed, "rate": final / elapsed,
            "client_cpu": (cpu1 - cpu0) / elapsed, "errors": errors, "first_error": first_error}


# --- groups --------------------------------------------------------------------------------

class Lane:
    """M connections building one group of M members at a time."""

    def __init__(self, port: int, members: int, groups: list[str], topic: str, stats: dict):
        self.conns = [Conn(port) for _ in range(members)]
        self.groups, self.topic, self.stats = groups, topic, stats
        self.m = members
        self.group = None
        self.done = not groups

    def start_next(self, send) -> None:
        if not self.groups:
            self.done = True
            self.group = None
            return
        self.group = self.groups.pop()
        self.member_ids = [""] * self.m
        self.gen = [None] * self.m          # generation each member last joined
        self.held = [False] * self.m        # a follower's join answer, not acted on yet
        self.slow = False
        self.complete = False
        self.hb_due: dict[int, float] = {}
        for i in range(self.m):
            self.join(i, send)

    def join(self, i: int, send) -> None:
        self.held[i] = False
        self.hb_due.pop(i, None)
        send(self.conns[i], JOIN, JOIN_V, join_body(self.group, self.member_ids[i], self.topic), (self.group, i))

    def sync(self, i: int, send, assignments=()) -> None:
        self.held[i] = False
        send(self.conns[i], SYNC, SYNC_V, sync_body(self.group, self.gen[i], self.member_ids[i], assignments),
             (self.group, i))

    def outstanding(self) -> int:
        return sum(c.session.in_flight for c in self.conns)

    def on_response(self, i: int, api: int, r, send) -> None:
        if api == JOIN:
            if r.error_code != 0:
                self.stats["join_errors"] += 1
                if r.error_code == ErrorCode.UNKNOWN_MEMBER_ID:
                    self.member_ids[i] = ""
                self.join(i, send)
                return
            self.member_ids[i], self.gen[i] = r.member_id, r.generation_id
            if r.leader == r.member_id:
                members = [m.member_id for m in r.members]
                share = [(m, assignment(self.topic, range(k, 60, len(members)))) for k, m in enumerate(members)]
                if len(members) == self.m:
                    self.complete = True
                    self.hb_due.clear()
                    self.sync(i, send, share)
                    return
                if not self.slow:
                    self.slow = True
                    self.stats["slow_groups"] += 1
                    for k in range(self.m):
                        if self.held[k]:
                            self.sync(k, send)
                self.sync(i, send, share)
            elif self.slow:
                self.sync(i, send)
            else:
                self.held[i] = True
        elif api == SYNC:
            if r.error_code == 0:
                if not self.complete:
                    self.hb_due[i] = time.perf_counter() + 0.02
                return
            self.stats["sync_errors"] += 1
            if r.error_code == ErrorCode.UNKNOWN_MEMBER_ID:
                self.member_ids[i] = ""
            if not self.complete:
                self.join(i, send)
        elif api == HEARTBEAT:
            if self.complete:
                return
            if r.error_code == 0:
                self.hb_due[i] = time.perf_counter() + 0.02
            else:
                if r.error_code == ErrorCode.UNKNOWN_MEMBER_ID:
                    self.member_ids[i] = ""
                self.join(i, send)

    def timers(self, now: float, send) -> None:
        for i, due in list(self.hb_due.items()):
            if due <= now and not self.conns[i].session.in_flight:
                del self.hb_due[i]
                send(self.conns[i], HEARTBEAT, HB_V, heartbeat_body(self.group, self.gen[i], self.member_ids[i]),
                     (self.group, i))


def run_groups(args) -> dict:
    names = [f"{args.tag}-g{n}" for n in range(args.groups)]
    per_lane = [names[k::args.lanes] for k in range(args.lanes)]
    stats = {"join_errors": 0, "sync_errors": 0, "slow_groups": 0, "requests": 0}
    lanes = [Lane(args.port, args.members, per_lane[k], args.topic, stats) for k in range(args.lanes)]
    ep = select.epoll()
    where = {}
    for lane in lanes:
        for i, c in enumerate(lane.conns):
            c.sock.setblocking(False)
            ep.register(c.fd, select.EPOLLIN)
            where[c.fd] = (lane, i)

    def send(c, api, version, body, tag):
        c.out += c.session.request(api, version, body)[1]
        stats["requests"] += 1
        flush(ep, c)

    start = time.perf_counter()
    for lane in lanes:
        lane.start_next(send)
    built = 0
    deadline = start + args.timeout
    while not all(lane.done for lane in lanes):
        if time.perf_counter() > deadline:
            raise TimeoutError(f"built {built} of {args.groups} groups in {args.timeout}s; {stats}")
        for fd, ev in ep.poll(0.01):
            lane, i = where[fd]
            c = lane.conns[i]
            if ev & select.EPOLLOUT:
                flush(ep, c)
            if not ev & (select.EPOLLIN | select.EPOLLHUP | select.EPOLLERR):
                continue
            for api, r in read_responses(c):
                lane.on_response(i, api, r, send)
            if lane.complete and not lane.outstanding():
                built += 1
                lane.start_next(send)
        now = time.perf_counter()
        for lane in lanes:
            if not lane.done and not lane.complete:
                lane.timers(now, send)
    elapsed = time.perf_counter() - start
    stats.update(groups=built, seconds=elapsed, connections=sum(len(lane.conns) for lane in lanes))
    if args.hold:
        # keep the connections open while the caller reads the broker's memory
        sys.stdout.write(json.dumps(stats) + "\n")
        sys.stdout.flush()
        sys.stdin.readline()
        return None
    return stats


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=("rate", "groups"))
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--topic", default="bench-60")
    p.add_argument("--tag", default="lg")
    p.add_argument("--api", choices=("heartbeat", "commit"), default="heartbeat")
    p.add_argument("--conns", type=int, default=1)
    p.add_argument("--inflight", type=int, default=1)
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--warmup", type=float, default=0.3)
    p.add_argument("--groups", type=int, default=10_000)
    p.add_argument("--members", type=int, default=5)
    p.add_argument("--lanes", type=int, default=100)
    p.add_argument("--timeout", type=float, default=600)
    p.add_argument("--hold", action="store_true", help="groups: print, then wait for a line on stdin")
    args = p.parse_args(argv)
    result = run_rate(args) if args.mode == "rate" else run_groups(args)
    if result is not None:
        sys.stdout.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
