"""Fuzzing a running broker while a healthy group carries on beside it.

A ``groupbroker serve`` process gets mutated requests of every API and version it advertises
(tests/support/fuzzing.py) on several connections, reconnecting whenever the broker closes one, for
``GROUPBROKER_FUZZ_SECONDS`` (default 45; ``make fuzz`` runs ten minutes). Meanwhile one healthy
member on its own connection heartbeats and commits. The test fails if the broker dies, logs a
traceback, if the healthy member's group rebalances or answers it with any error, or if any of
its heartbeats waits a second or more. ``GROUPBROKER_FUZZ_SEED`` replays a run.
"""

from __future__ import annotations

import os
import random
import socket
import threading
import time

from kafka_client.admin import Connection
from tests.support.fuzzing import request_frames
from protocol import REQUESTS
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

SECONDS = float(os.environ.get("GROUPBROKER_FUZZ_SECONDS", "45"))
SEED = int(os.environ.get("GROUPBROKER_FUZZ_SEED", str(random.randrange(1 << 30))))
FUZZERS = 3
GROUP, TOPIC = "healthy", "healthy-topic"
E = ErrorCode


class HealthyMember(threading.Thread):
    """One group member heartbeating every 100 ms and committing every 500 ms."""

    def __init__(self, port: int, stop: threading.Event):
        super().__init__(daemon=True)
        self.port, self.stop = port, stop
        self.problems: list[str] = []
        self.slowest = 0.0
        self.heartbeats = self.commits = 0

    def run(self) -> None:
        try:
            self._run()
        except Exception as e:              # a failure here is what the test reports
            self.problems.append(f"healthy member failed: {e!r}")

    def _run(self) -> None:
        conn = Connection("127.0.0.1", self.port, client_id="healthy")
        created = conn.call(ApiKey.CREATE_TOPICS, lambda v: REQUESTS[ApiKey.CREATE_TOPICS].cls(topics=(REQUESTS[ApiKey.CREATE_TOPICS].cls.CreatableTopic(
            name=TOPIC, num_partitions=1, replication_factor=1),), timeout_ms=10000))
        assert created.topics[0].error_code in (E.NONE, E.TOPIC_ALREADY_EXISTS), created
        member, generation = _join(conn)
        next_commit = offset = 0
        while not self.stop.is_set():
            began = time.monotonic()
            answer = conn.call(ApiKey.HEARTBEAT, lambda v: REQUESTS[ApiKey.HEARTBEAT].cls(group_id=GROUP, generation_id=generation,
                                                             member_id=member))
            took = time.monotonic() - began
            self.slowest = max(self.slowest, took)
            self.heartbeats += 1
            if answer.error_code != E.NONE:
                self.problems.append(f"heartbeat answered {E(answer.error_code).name}")
                return
            if took >= 1.0:
                self.problems.append(f"a heartbeat waited {took:.2f} s")
            if began >= next_commit:
                offset += 1
                self._commit(conn, member, generation, offset)
                next_commit = began + 0.5
            time.sleep(0.1)
        conn.close()

    def _commit(self, conn, member: str, generation: int, offset: int) -> None:
        req = REQUESTS[ApiKey.OFFSET_COMMIT].cls
        topic = req.OffsetCommitRequestTopic
        answer = conn.call(ApiKey.OFFSET_COMMIT, lambda v: req(
            group_id=GROUP, generation_id_or_member_epoch=generation, member_id=member,
            topics=(topic(name=TOPIC, partitions=(topic.OffsetCommitRequestPartition(
                partition_index=0, committed_offset=offset),)),)))
        errors = {p.error_code for t in answer.topics for p in t.partitions}
        if errors != {E.NONE}:
            self.problems.append(f"commit answered {sorted(E(e).name for e in errors)}")
        self.commits += 1


def _join(conn: Connection) -> tuple[str, int]:
    join = REQUESTS[ApiKey.JOIN_GROUP].cls
    protocol = join.JoinGroupRequestProtocol(name="range", metadata=b"")

    def build(member: str):
        return lambda v: join(group_id=GROUP, session_timeout_ms=10000, rebalance_timeout_ms=10000,
                              member_id=member, protocol_type="consumer", protocols=(protocol,))

    joined = conn.call(ApiKey.JOIN_GROUP, build(""))
    if joined.error_code == E.MEMBER_ID_REQUIRED:
        joined = conn.call(ApiKey.JOIN_GROUP, build(joined.member_id))
    assert joined.error_code == E.NONE, joined
    synced = conn.call(ApiKey.SYNC_GROUP, lambda v: REQUESTS[ApiKey.SYNC_GROUP].cls(
        group_id=GROUP, generation_id=joined.generation_id, member_id=joined.member_id,
        protocol_type="consumer", protocol_name="range"))
    assert synced.error_code == E.NONE, synced
    return joined.member_id, joined.generation_id


def _fuzz(port: int, seed: int, apis: dict, stop: threading.Event, sent: list, problems: list) -> None:
    try:
        _fuzz_connection(port, seed, apis, stop, sent)
    except Exception as e:                  # reported by the test
        problems.append(f"fuzzer {seed} failed: {e!r}")


def _fuzz_connection(port: int, seed: int, apis: dict, stop: threading.Event, sent: list) -> None:
    """Send mutated frames on one connection, draining answers; reconnect when closed."""
    frames = request_frames(seed, apis)
    sock = None
    since_connect = 0
    while not stop.is_set():
        if sock is None or since_connect >= 200:
            if sock is not None:
                sock.close()                       # abandons whatever is parked on it
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)
            sock.setblocking(False)
            since_connect = 0
        try:
            _send(sock, next(frames))
            sent[0] += 1
            since_connect += 1
            _drain(sock)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, _Closed):
            sock.close()
            sock = None
    if sock is not None:
        sock.close()


class _Closed(Exception):
    pass


def _send(sock: socket.socket, data: bytes) -> None:
    view = memoryview(data)
    deadline = time.monotonic() + 2
    while view:
        try:
            view = view[sock.send(view):]
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise _Closed from None            # the broker stopped reading: start afresh
            _drain(sock)
            time.sleep(0.001)


def _drain(sock: socket.socket) -> None:
    while True:
        try:
            if not sock.recv(1 << 16):
                raise _Closed
        except BlockingIOError:
            return


def test_fuzzed_requests_never_disturb_a_healthy_group(start_broker):
    broker = start_broker({"group.initial.rebalance.delay.ms": 0})
    probe = Connection("127.0.0.1", broker.port)
    apis = {key: (REQUESTS[key].min_version, top) for key, top in probe.versions.items()}
    probe.close()
    stop = threading.Event()
    healthy = HealthyMember(broker.port, stop)
    healthy.start()
    sent = [0]
    failed: list[str] = []
    fuzzers = [threading.Thread(target=_fuzz, args=(broker.port, SEED + i, apis, stop, sent, failed),
                                daemon=True) for i in range(FUZZERS)]
    for f in fuzzers:
        f.start()
    deadline = time.monotonic() + SECONDS
    while time.monotonic() < deadline and broker.running() and not healthy.problems and not failed:
        time.sleep(0.2)
    stop.set()
    for t in (healthy, *fuzzers):
        t.join(10)
    where = f"(seed {SEED}, {sent[0]} requests; replay with GROUPBROKER_FUZZ_SEED={SEED})"
    assert broker.running(), f"the broker died {where}:\n{broker.log_text()[-3000:]}"
    assert not failed, f"{failed} {where}"
    assert not healthy.problems, f"{healthy.problems} {where}"
    assert healthy.heartbeats > 0 and healthy.commits > 0
    log = broker.log_text()
    assert "Traceback" not in log, f"the broker logged a traceback {where}:\n" + \
        log[max(0, log.index("Traceback") - 500):][:4000]
    print(f"fuzz: {sent[0]} requests in {SECONDS:.0f} s, {healthy.heartbeats} heartbeats "
          f"(slowest {healthy.slowest * 1000:.0f} ms) {where}")
