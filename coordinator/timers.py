"""Keyed timers of one shard on a single heap (Kafka's CoordinatorTimer, without threads).

Scheduling a key again replaces its timer. Re-arming happens on every Heartbeat and
OffsetCommit, so it must not grow the heap: a key keeps one heap entry, and a later deadline
only updates the timer in place; the entry is moved when it comes up early (lazily). Timers
due at the same instant fire in the order they were last scheduled, whatever the heap holds.
Time is milliseconds, passed in.
"""

from __future__ import annotations

import heapq
import math
from itertools import count
from typing import Callable, Hashable, Iterator

#: what a timer runs: ``fn(result, now)`` adds what it decides to the step's result
Callback = Callable[[object, int], None]


class Timers:
    def __init__(self) -> None:
        self._armed: dict[Hashable, tuple[int, int, Callback]] = {}   # key -> (deadline, seq, fn)
        self._heap: list[tuple[int, int, Hashable]] = []               # (deadline, seq, key)
        self._queued: dict[Hashable, tuple[int, int]] = {}             # key -> its live heap entry
        self._seq = count()
        self._soonest_new = math.inf       # the earliest deadline armed since next_deadline()

    def schedule(self, key: Hashable, deadline: int, fn: Callback) -> None:
        seq = next(self._seq)
        self._armed[key] = (deadline, seq, fn)
        if deadline < self._soonest_new:
            self._soonest_new = deadline
        queued = self._queued.get(key)
        if queued is None or deadline < queued[0]:
            self._push(key, deadline, seq)

    def cancel(self, key: Hashable) -> None:
        self._armed.pop(key, None)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._armed

    def __len__(self) -> int:
        return len(self._armed)

    @property
    def heap_size(self) -> int:
        """Entries on the heap, stale ones included (what re-arming must keep bounded)."""
        return len(self._heap)

    def clear(self) -> None:
        self._armed.clear()
        self._heap.clear()
        self._queued.clear()

    def due(self, now: int) -> Iterator[Callback]:
        """Each timer due at ``now``, earliest first, removed as it is handed out; a timer
        scheduled by a callback and already due comes out in the same pass."""
        while (key := self._next_key()) is not None and self._armed[key][0] <= now:
            heapq.heappop(self._heap)
            del self._queued[key]
            yield self._armed.pop(key)[2]

    def next_deadline(self) -> int | None:
        """The earliest deadline; from now on :meth:`armed_before` watches for earlier ones."""
        self._soonest_new = math.inf
        key = self._next_key()
        return None if key is None else self._armed[key][0]

    def armed_before(self, deadline: float) -> bool:
        """Whether a timer was armed for before ``deadline`` since :meth:`next_deadline` was
        last asked: cheaper than asking again, for a driver that sleeps until that deadline."""
        return self._soonest_new < deadline

    def _next_key(self) -> Hashable | None:
        """The key of the earliest armed timer, with the heap's top made exact for it."""
        while self._heap:
            when, seq, key = self._heap[0]
            if self._queued.get(key) != (when, seq):
                heapq.heappop(self._heap)               # replaced by an earlier entry
                continue
            armed = self._armed.get(key)
            if armed is None:                           # cancelled
                heapq.heappop(self._heap)
                del self._queued[key]
                continue
            if armed[:2] != (when, seq):                # re-armed: move the entry, keep its place
                heapq.heappop(self._heap)
                self._push(key, armed[0], armed[1])
                continue
            return key
        return None

    def _push(self, key: Hashable, deadline: int, seq: int) -> None:
        self._queued[key] = (deadline, seq)
        heapq.heappush(self._heap, (deadline, seq, key))
