"""The broker's one flusher: fsync passes across every shard log that needs one.

A shard asks for a flush when an append leaves ``log.flush.interval.messages`` records
unflushed (with ``=1``, every append: fsync before acknowledging); the periodic check, every
``log.flush.scheduler.interval.ms``, asks for every shard unflushed for
``log.flush.interval.ms``, as Kafka's log flusher does. Passes run one at a time in a worker
thread, so a pass covers everything any shard appended while the previous one ran: group
commit across shards.
"""

from __future__ import annotations

from typing import Protocol, Sequence

import trio

from offsets_log.flush import FlushPolicy, flush_pass
from offsets_log.log import ShardLog


class Flushed(Protocol):
    """What the flusher needs of a shard (a ``Flushed``)."""
    log: ShardLog
    last_flush: float

    @property
    def unflushed(self) -> bool: ...

    def flushed(self, shard_log: ShardLog, result) -> None: ...


class Flusher:
    def __init__(self, policy: FlushPolicy):
        self.policy = policy
        self._wanted: dict[Flushed, None] = {}      # in the order they asked
        self._wake = trio.Event()
        self._thread = trio.CapacityLimiter(1)     # its own: never queued behind other thread work
        self.passes = 0

    def request(self, runner: Flushed) -> None:
        self._wanted[runner] = None
        self._wake.set()

    async def run(self, runners: Sequence[Flushed]) -> None:
        """Flush on request (and periodically for ``runners``, if the policy says so)."""
        async with trio.open_nursery() as nursery:
            if self.policy.periodic:
                nursery.start_soon(self._periodic, runners)
            while True:
                await self._wake.wait()
                self._wake = trio.Event()
                batch = [(runner, runner.log) for runner in self._wanted if runner.unflushed]
                self._wanted.clear()
                if not batch:
                    continue
                results = await trio.to_thread.run_sync(flush_pass, [shard_log for _, shard_log in batch],
                                                       limiter=self._thread)
                self.passes += 1
                for (runner, shard_log), result in zip(batch, results):
                    runner.flushed(shard_log, result)

    async def _periodic(self, runners: Sequence[Flushed]) -> None:
        age_s = self.policy.age_ms / 1000
        while True:
            await trio.sleep(self.policy.scheduler_interval_ms / 1000)
            now = trio.current_time()
            for runner in runners:
                if runner.unflushed and now - runner.last_flush >= age_s:
                    self.request(runner)
