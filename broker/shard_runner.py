"""One trio task per coordinator shard: the only code that touches that shard.

The runner loads the shard from its offsets log, then loops: wait for requests or the next
timer deadline, hand everything queued to the pure :class:`coordinator.shard.Shard`, write
the records it produced in one append and one fsync (group commit: every request that
arrived meanwhile shares it), and only then release the replies that depended on them.
Compaction of the shard's log runs in a worker thread between batches.

Time given to the shard is wall-clock milliseconds anchored once at start and advanced by
trio's clock, so trio's MockClock drives every coordinator timeout in tests while stored
timestamps stay meaningful across restarts.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field

import trio

from coordinator.actions import Persist, Reply, RequestContext
from coordinator.recovery import load_shard
from coordinator.responses import HEARTBEAT, error_response
from coordinator.shard import Shard
from offsets_log.compaction import compact
from offsets_log.errors import OffsetsLogError
from offsets_log.log import GroupCommit, ShardLog
from protocol.errors import ErrorCode

log = logging.getLogger("groupbroker.shards")


@dataclass(eq=False)
class Ticket:
    """One request waiting for its answer; the shard sees it as the reply token."""
    api_key: int
    version: int
    request: object
    done: trio.Event = field(default_factory=trio.Event)
    response: object = None

    def answer(self, response) -> None:
        if not self.done.is_set():
            self.response = response
            self.done.set()
            _log_error(self, response)


_API_NAMES = {11: "JoinGroup", 14: "SyncGroup", 12: "Heartbeat", 13: "LeaveGroup", 8: "OffsetCommit",
              47: "OffsetDelete", 9: "OffsetFetch"}


def _log_error(ticket: Ticket, response) -> None:
    """One INFO line per group-API error answered to a member: what reproducing a
    rebalance failure needs to see (e.g. ILLEGAL_GENERATION on a late commit)."""
    error = getattr(response, "error_code", 0)
    if not error and ticket.api_key == 8:
        error = next((p.error_code for t in response.topics for p in t.partitions if p.error_code), 0)
    group = getattr(ticket.request, "group_id", None)
    if not error or group is None or ticket.api_key not in _API_NAMES:
        return
    request = ticket.request
    generation = getattr(request, "generation_id", getattr(request, "generation_id_or_member_epoch", None))
    log.info("group %s: %s v%d from member %s (generation %s) answered %s", group,
             _API_NAMES[ticket.api_key], ticket.version, getattr(request, "member_id", ""),
             generation, ErrorCode(error).name)


class ShardRunner:
    def __init__(self, shard: Shard, shard_log: ShardLog, *, compact_interval_s: float = 600.0,
                 wall_clock=time.time):
        self.shard, self.log = shard, shard_log
        self.group_commit = GroupCommit(shard_log)
        self.compact_interval_s = compact_interval_s
        self._wall_clock = wall_clock
        self._epoch_ms = 0.0
        self._send, self._receive = trio.open_memory_channel(math.inf)
        self.failed: str | None = None
        self.loaded = False

    def now_ms(self) -> int:
        return int(self._epoch_ms + trio.current_time() * 1000)

    async def call(self, api_key: int, version: int, request, *, client_id: str = "",
                   client_host: str = "/127.0.0.1"):
        """Submit a request and wait for the shard's answer (however long a join parks)."""
        if self.failed is not None:
            return error_response(api_key, version, request, ErrorCode.NOT_COORDINATOR)
        if not self.loaded:
            # Kafka answers heartbeats "blindly" with NONE while the shard loads.
            code = ErrorCode.NONE if api_key == HEARTBEAT else ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
            return error_response(api_key, version, request, code)
        ticket = Ticket(api_key, version, request)
        ctx = RequestContext(ticket, api_key, version, client_id, client_host)
        self._send.send_nowait(lambda now: self.shard.handle(now, ctx, request))
        await ticket.done.wait()
        return ticket.response

    def forget_topics(self, topics: set[str]) -> None:
        """Deleted topics: tombstone their committed offsets in every group (Kafka does too)."""
        if self.loaded and self.failed is None:
            self._send.send_nowait(lambda now: self.shard.forget_topics(topics))

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        self._epoch_ms = self._wall_clock() * 1000 - trio.current_time() * 1000
        actions = await trio.to_thread.run_sync(load_shard, self.shard, self.log, self.now_ms())
        self.loaded = True
        await self._execute(actions)
        task_status.started()
        next_compaction = trio.current_time() + self.compact_interval_s
        while True:
            deadline = self.shard.next_deadline()
            wake_at = min(next_compaction, math.inf if deadline is None else
                          (deadline - self._epoch_ms) / 1000)
            batch = []
            with trio.move_on_at(wake_at):
                batch.append(await self._receive.receive())
            while True:
                try:
                    batch.append(self._receive.receive_nowait())
                except trio.WouldBlock:
                    break
            now = self.now_ms()
            actions = []
            for operation in batch:
                actions += operation(now)
            actions += self.shard.tick(now)
            await self._execute(actions)
            if trio.current_time() >= next_compaction:
                await self._compact()
                next_compaction = trio.current_time() + self.compact_interval_s

    async def _execute(self, actions) -> None:
        """Send replies in order; those after a Persist wait until its records are durable."""
        records = [r for a in actions if isinstance(a, Persist) for r in a.records]
        first_persist = next((i for i, a in enumerate(actions) if isinstance(a, Persist)), len(actions))
        for action in actions[:first_persist]:
            action.token.answer(action.response)
        if not records:
            return
        try:
            if self.failed is None:
                await trio.to_thread.run_sync(self.group_commit.commit, records, self.now_ms())
            else:
                raise OffsetsLogError(self.failed)
        except OffsetsLogError as e:
            self.failed = str(e)
            log.error("shard %d: offsets log failed (%s); the shard answers NOT_COORDINATOR until "
                      "restarted", self.shard.shard_id, e)
            for action in actions[first_persist:]:
                if isinstance(action, Reply):
                    t = action.token
                    t.answer(error_response(t.api_key, t.version, t.request, ErrorCode.NOT_COORDINATOR))
            return
        for action in actions[first_persist:]:
            if isinstance(action, Reply):
                action.token.answer(action.response)

    async def _compact(self) -> None:
        try:
            result = await trio.to_thread.run_sync(compact, self.log, self.now_ms())
            log.info("shard %d: compacted %s", self.shard.shard_id, result)
        except OffsetsLogError as e:
            log.error("shard %d: compaction failed: %s", self.shard.shard_id, e)
