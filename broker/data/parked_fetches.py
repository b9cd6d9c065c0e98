"""Long-poll Fetches waiting for records, filed under the partitions they wait on.

An append wakes only the fetches parked on its own partition (Kafka's fetch purgatory is keyed
the same way), so a parked fetch costs nothing until records it could return arrive: no timer
of ours, no re-read on appends elsewhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import trio

Partition = tuple[str, int]


class FetchWaiter:
    """One parked fetch: woken (at most once until it waits again) by an append it cares about."""

    __slots__ = ("_event",)

    def __init__(self) -> None:
        self._event = trio.Event()

    @property
    def woken(self) -> bool:
        """An append arrived since the fetch last read."""
        return self._event.is_set()

    def wake(self) -> bool:
        if self._event.is_set():
            return False
        self._event.set()
        return True

    async def wait(self) -> None:
        """Until an append to one of its partitions; then armed again for the next one."""
        await self._event.wait()
        self._event = trio.Event()


class ParkedFetches:
    """Every parked fetch by partition; ``parked`` and ``wakeups`` are there to be observed."""

    def __init__(self) -> None:
        self._by_partition: dict[Partition, set[FetchWaiter]] = {}
        self.parked = 0            # fetches waiting now
        self.wakeups = 0           # times an append woke a parked fetch

    @contextmanager
    def park(self, partitions: Iterable[Partition]) -> Iterator[FetchWaiter]:
        """File a waiter under ``partitions`` for as long as the block runs (cancelled or not)."""
        waiter = FetchWaiter()
        keys = set(partitions)
        for key in keys:
            self._by_partition.setdefault(key, set()).add(waiter)
        self.parked += 1
        try:
            yield waiter
        finally:
            self.parked -= 1
            for key in keys:
                waiters = self._by_partition[key]
                waiters.discard(waiter)
                if not waiters:
                    del self._by_partition[key]

    def appended(self, topic: str, partition: int) -> None:
        """Records arrived on ``topic``/``partition``: wake the fetches parked on it."""
        for waiter in self._by_partition.get((topic, partition), ()):
            if waiter.wake():
                self.wakeups += 1
