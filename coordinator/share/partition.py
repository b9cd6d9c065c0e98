"""One share-partition's delivery state (Kafka's SharePartition): which records of a topic
partition a share group has delivered, to whom, how often, and what became of them.

Records from the start offset on are cached in in-flight batches: each batch (or, once split,
each of its offsets) is AVAILABLE, ACQUIRED by a member under a lock until a deadline,
ACKNOWLEDGED or ARCHIVED. Acquiring a record counts a delivery; a released or timed-out record
at the group's delivery limit is archived instead of becoming available again. The start offset
moves past the records whose delivery is complete, and the cache forgets them.

Pure logic: time (ms) is passed in, the log's batches are described by :class:`LogBatch`.
"""

from __future__ import annotations

import bisect
import math
from collections import Counter
from dataclasses import dataclass, replace
from typing import Iterator, NamedTuple

from protocol.errors import ErrorCode

AVAILABLE, ACQUIRED, ACKNOWLEDGED, ARCHIVED = 0, 1, 2, 4
TERMINAL = (ACKNOWLEDGED, ARCHIVED)
GAP, ACCEPT, RELEASE, REJECT, RENEW = 0, 1, 2, 3, 4
#: an acknowledgement's type -> the state it moves a record to
_ACKED_STATE = {GAP: ARCHIVED, ACCEPT: ACKNOWLEDGED, RELEASE: AVAILABLE, REJECT: ARCHIVED}
_OUTCOME = {GAP: "rejected", ACCEPT: "accepted", RELEASE: "released", REJECT: "rejected"}
NO_MEMBER = ""


class ShareError(Exception):
    """What Kafka refuses a share-partition (an acknowledgement, a start it cannot find): its
    error code and message; nothing was changed."""

    def __init__(self, code: ErrorCode, message: str):
        super().__init__(message)
        self.code, self.message = code, message


class LogBatch(NamedTuple):
    """What acquiring needs to know of one record batch read from the log."""
    base_offset: int
    last_offset: int
    producer_id: int = -1
    transactional: bool = False
    control: bool = False
    abort_marker: bool = False


class Acquired(NamedTuple):
    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(slots=True)
class Delivery:
    """The state of a batch or of one offset (Kafka's InFlightState)."""
    state: int
    count: int
    member: str = NO_MEMBER
    deadline: int | None = None          # when the acquisition lock expires (ACQUIRED only)
    #: released by an acknowledgement whose write is still under way (Kafka's ongoing state
    #: transition): not acquirable until :meth:`SharePartition.settle`
    settling: bool = False


@dataclass(slots=True)
class Batch:
    """An in-flight batch: one state for all its offsets, or one per offset once split."""
    first: int
    last: int
    whole: Delivery | None
    offsets: dict[int, Delivery] | None = None

    def split(self) -> None:
        if self.offsets is None:
            self.offsets = {o: replace(self.whole) for o in range(self.first, self.last + 1)}
            self.whole = None

    def deliveries(self) -> Iterator[tuple[int, int, Delivery]]:
        """(first, last, delivery) runs: the whole batch, or each offset."""
        if self.offsets is None:
            yield self.first, self.last, self.whole
        else:
            for offset, delivery in self.offsets.items():
                yield offset, offset, delivery


@dataclass(frozen=True, slots=True)
class Limits:
    """The group's settings a share-partition reads at each use."""
    delivery_count_limit: int = 5
    max_record_locks: int = 2000
    lock_duration_ms: int = 30_000
    renew_enabled: bool = True


class SharePartition:
    def __init__(self, start_offset: int):
        self.start_offset = self.end_offset = start_offset
        #: records acknowledged since last read, by outcome (accepted, released, rejected,
        #: archived: released at the delivery limit), for the journal
        self.tally: Counter[str] = Counter()
        self._settling = False
        self._to_write = None
        self._firsts: list[int] = []
        self._batches: dict[int, Batch] = {}
        self._find_next = False

    @classmethod
    def restored(cls, start_offset: int, batches) -> SharePartition:
        """A share-partition from its durable state: its start offset and (first, last, state,
        delivery count) batches, none of them acquired any more."""
        sp = cls(start_offset)
        for first, last, state, count in batches:
            if last >= start_offset:
                sp._add(Batch(max(first, start_offset), last, Delivery(state, count)))
        if sp._firsts:
            sp.end_offset = sp._batches[sp._firsts[-1]].last
            sp._find_next = True
            sp._advance()
        return sp

    def durable_state(self) -> tuple[int, list[tuple[int, int, int, int]], int]:
        """(start offset, batches, delivery-complete count) to make durable after a change: as
        they were before the change moved the start offset (Kafka writes the start offset it
        had, the next write carries the new one), every run of the cache that is not acquired
        (acquiring is never written, as in Kafka)."""
        if self._to_write is not None:
            return self._to_write
        return self._state_now()

    def _state_now(self) -> tuple[int, list[tuple[int, int, int, int]], int]:
        out: list[tuple[int, int, int, int]] = []
        complete = 0
        for batch in self.batches():
            for first, last, d in batch.deliveries():
                if d.state == ACQUIRED or last < self.start_offset:
                    continue
                first = max(first, self.start_offset)
                if d.state in TERMINAL:
                    complete += last - first + 1
                if out and out[-1][1] == first - 1 and out[-1][2:] == (d.state, d.count):
                    out[-1] = (out[-1][0], last, d.state, d.count)
                else:
                    out.append((first, last, d.state, d.count))
        return self.start_offset, out, complete

    # --- reading --------------------------------------------------------------------------
    def batches(self) -> list[Batch]:
        return [self._batches[f] for f in self._firsts]

    def in_flight(self) -> int:
        return 0 if not self._firsts else self.end_offset - self.start_offset + 1

    def _floor(self, offset: int) -> Batch | None:
        i = bisect.bisect_right(self._firsts, offset)
        return self._batches[self._firsts[i - 1]] if i else None

    def _range(self, low: int, high: int) -> list[Batch]:
        """The cached batches whose first offset is in [low, high]."""
        i, j = bisect.bisect_left(self._firsts, low), bisect.bisect_right(self._firsts, high)
        return [self._batches[f] for f in self._firsts[i:j]]

    def _add(self, batch: Batch) -> None:
        bisect.insort(self._firsts, batch.first)
        self._batches[batch.first] = batch

    def next_fetch_offset(self) -> int:
        """Where the next read of the log starts (Kafka's nextFetchOffset)."""
        last = self._batches[self._firsts[-1]].last if self._firsts else None
        stale = last is None or self.start_offset > last
        if not self._find_next:
            return self.end_offset if stale else self.end_offset + 1
        if stale:
            self._find_next = False
            return self.end_offset
        for batch in self.batches():
            for first, _, d in batch.deliveries():
                if d.state == AVAILABLE and not d.settling:
                    return first
        self._find_next = False
        return self.end_offset + 1

    def can_acquire(self, limits: Limits) -> bool:
        return self.next_fetch_offset() != self.end_offset + 1 or self.in_flight() < limits.max_record_locks

    def next_deadline(self) -> int | None:
        deadlines = [d.deadline for b in self._batches.values() for _, _, d in b.deliveries()
                     if d.deadline is not None]
        return min(deadlines) if deadlines else None

    # --- acquiring ------------------------------------------------------------------------
    def acquire(self, member: str, fetched: list[LogBatch], fetch_offset: int, max_records: int,
                batch_size: int, limits: Limits, now: int, aborted=None,
                record_limit: bool = False) -> list[Acquired]:
        """Kafka's acquire: records from the log (new ones) and cached available ones, for
        ``member``: whole batches at a time (batch-optimized mode), or at most ``max_records``
        records, batches split to keep to it (``record_limit``, ShareAcquireMode 1);
        ``aborted`` ([(producer id, first offset)]) for a read_committed group."""
        if max_records <= 0 or not fetched or fetched[-1].last_offset < self.start_offset:
            return []
        wanted = min(max_records, limits.max_record_locks - self.in_flight())
        last_to_acquire = fetched[-1].last_offset
        if wanted <= 0 and fetch_offset <= self.end_offset:
            wanted = min(max_records, self.end_offset - fetch_offset + 1)
            last_to_acquire = min(last_to_acquire, self.end_offset)
        if wanted <= 0:
            return []
        base = fetched[0].base_offset
        floor = self._floor(base)
        if floor is None and base < self.start_offset:
            base = self.start_offset
        elif floor is not None and floor.last >= base:
            base = floor.first
        cached = self._range(min(fetched[0].base_offset, base), last_to_acquire)
        deadline = now + limits.lock_duration_ms
        if not cached:
            acquired = self._acquire_new(member, base, last_to_acquire, batch_size, wanted, fetched, deadline,
                                         record_limit)
        else:
            acquired = self._acquire_cached(member, cached, fetched[0].base_offset, last_to_acquire, wanted,
                                            limits, deadline, record_limit)
            count = sum(a.last_offset - a.first_offset + 1 for a in acquired)
            if count < wanted and cached[-1].last < last_to_acquire:
                acquired += self._acquire_new(member, cached[-1].last + 1, last_to_acquire, batch_size,
                                              wanted - count, fetched, deadline, record_limit)
        if aborted and acquired:
            acquired = self._drop_aborted(acquired, fetched, aborted)
        return acquired

    def _acquire_new(self, member: str, first: int, last: int, batch_size: int, wanted: int,
                     fetched: list[LogBatch], deadline: int, record_limit: bool = False) -> list[Acquired]:
        if not self._firsts and self.end_offset > first:
            first = self.end_offset
        if first > last:
            return []
        if wanted < last - first + 1:                 # whole log batches, even past the limit
            target = first + wanted - 1
            last = next((b.last_offset for b in fetched if b.base_offset <= target <= b.last_offset), target)
        if record_limit:            # one batch: the first ``wanted`` acquired, the rest available
            batch = Batch(first, last, Delivery(ACQUIRED, 1, member, deadline))
            self._add(batch)
            if self._firsts[0] == first:
                self.start_offset = first
            self.end_offset = max(self.end_offset, last)
            if last - first + 1 <= wanted:
                return [Acquired(first, last, 1)]
            batch.split()
            for offset in range(first + wanted, last + 1):
                batch.offsets[offset] = Delivery(AVAILABLE, 0)
            self._find_next = True
            return [Acquired(first, first + wanted - 1, 1)]
        ranges, current = [], first
        if last - first + 1 > batch_size:
            for b in fetched:
                if b.base_offset - current >= batch_size and b.base_offset <= last:
                    ranges.append((current, b.base_offset - 1))
                    current = b.base_offset
        ranges.append((current, last))
        for low, high in ranges:
            self._add(Batch(low, high, Delivery(ACQUIRED, 1, member, deadline)))
        if self._firsts[0] == first:
            self.start_offset = first
        self.end_offset = max(self.end_offset, last)
        return [Acquired(low, high, 1) for low, high in ranges]

    def _acquire_cached(self, member: str, cached: list[Batch], fetched_base: int, last_to_acquire: int,
                        wanted: int, limits: Limits, deadline: int, record_limit: bool = False) -> list[Acquired]:
        limit = limits.delivery_count_limit
        throttle_at = max(2, math.ceil(limit / 2))
        acquired: list[Acquired] = []
        count = 0
        for batch in cached:
            if count >= wanted:
                break
            available = [d.count for _, _, d in batch.deliveries() if d.state == AVAILABLE and not d.settling]
            throttle = bool(available) and max(available) >= throttle_at
            if throttle and count > 0:
                break
            whole_fits = batch.first >= fetched_base and batch.last <= last_to_acquire
            too_many = record_limit and batch.last - batch.first + 1 > wanted - count
            if not whole_fits or batch.offsets is not None or throttle or too_many:
                if batch.offsets is None:
                    if batch.whole.state != AVAILABLE or batch.whole.settling:
                        continue
                    batch.split()
                singles = self._acquire_offsets(member, batch, fetched_base, last_to_acquire, limit,
                                                throttle_at, deadline, wanted - count if record_limit else None)
                acquired += singles
                got = sum(a.last_offset - a.first_offset + 1 for a in singles)
                count += got
                if throttle and got:
                    break
                continue
            if batch.whole.state != AVAILABLE or batch.whole.settling:
                continue
            d = batch.whole
            d.state, d.count, d.member, d.deadline = ACQUIRED, d.count + 1, member, deadline
            acquired.append(Acquired(batch.first, batch.last, d.count))
            count += batch.last - batch.first + 1
        return acquired

    @staticmethod
    def _acquire_offsets(member: str, batch: Batch, low: int, high: int, limit: int, throttle_at: int,
                         deadline: int, most: int | None = None) -> list[Acquired]:
        """Kafka's acquireSubsetBatchRecords: the available offsets of a split batch; records
        delivered often go in ever smaller groups, one on its last attempt alone."""
        got: list[Acquired] = []
        taken, cap = 0, None
        size = batch.last - batch.first + 1
        for offset, d in batch.offsets.items():
            if offset < low or offset > high or d.state != AVAILABLE or d.settling:
                continue
            if limit > 2 and d.count == limit - 1 and taken > 0:
                break
            if cap is None and d.count >= throttle_at:
                cap = max(1, size >> (d.count - throttle_at + 1))
            d.state, d.count, d.member, d.deadline = ACQUIRED, d.count + 1, member, deadline
            taken += 1
            if got and got[-1].last_offset == offset - 1 and got[-1].delivery_count == d.count:
                got[-1] = got[-1]._replace(last_offset=offset)
            else:
                got.append(Acquired(offset, offset, d.count))
            if (d.count == limit and limit > 2) or (cap is not None and taken == cap) or taken == most:
                break
        return got

    def _drop_aborted(self, acquired: list[Acquired], fetched: list[LogBatch], aborted) -> list[Acquired]:
        """read_committed: the records of aborted transactions are archived and cut out of what
        was acquired (their commit and abort markers stay, for the client to skip)."""
        pending = sorted(aborted, key=lambda a: a[1])
        open_aborts: set[int] = set()
        cut: list[tuple[int, int]] = []
        for b in fetched:
            while pending and pending[0][1] <= b.last_offset:
                open_aborts.add(pending.pop(0)[0])
            if b.control:
                if b.abort_marker:
                    open_aborts.discard(b.producer_id)
            elif b.transactional and b.producer_id in open_aborts:
                cut.append((b.base_offset, b.last_offset))
        for low, high in cut:
            floor = self._floor(low)
            for batch in self._range(floor.first if floor else low, high):
                if batch.offsets is None and (batch.first < low or batch.last > high):
                    batch.split()
                for first, last, d in list(batch.deliveries()):
                    if low <= first and last <= high and d.state == ACQUIRED:
                        d.state, d.member, d.deadline = ARCHIVED, NO_MEMBER, None
        kept = []
        for a in acquired:
            pieces = [(a.first_offset, a.last_offset)]
            for low, high in cut:
                pieces = [p for lo, hi in pieces for p in ((lo, min(hi, low - 1)), (max(lo, high + 1), hi))
                          if p[0] <= p[1]]
            kept += [Acquired(lo, hi, a.delivery_count) for lo, hi in pieces]
        self._advance()
        return kept

    def log_start_moved(self, log_start: int) -> None:
        """Kafka's updateCacheAndOffsets: records below the log's new start offset (retention,
        DeleteRecords) are gone: the available ones are archived, the start offset moves to it
        (acquired ones stay until acknowledged or their lock runs out, then are archived)."""
        if log_start <= self.start_offset:
            return
        for batch in self.batches():
            if batch.first >= log_start:
                break
            if batch.offsets is None and batch.last >= log_start:
                batch.split()
            for first, last, d in batch.deliveries():
                if last < log_start and d.state == AVAILABLE:
                    d.state = ARCHIVED
        self.start_offset = log_start
        self.end_offset = max(self.end_offset, log_start)
        self._find_next = True
        self._advance()

    # --- acknowledging --------------------------------------------------------------------
    def acknowledge(self, member: str, batches, limits: Limits, now: int, settling: bool = False) -> None:
        """Kafka's acknowledge: each (first, last, types) in order; the first refusal undoes
        this call's changes and raises :class:`ShareError`. ``settling``: the records released
        stay out of reach until :meth:`settle` (a ShareFetch's own fetch does not take again
        what it releases, as Kafka's is done while the release is being written)."""
        self._settling = settling
        saved = {first: _copy(batch) for first, batch in self._batches.items()}
        saved_find_next, saved_tally = self._find_next, Counter(self.tally)
        try:
            for first, last, types in batches:
                if any(t != GAP and not ACCEPT <= t <= RENEW for t in types):
                    raise ShareError(ErrorCode.INVALID_REQUEST, f"Invalid acknowledge type: {list(types)}")
                if last < self.start_offset:
                    continue
                for batch in self._acknowledged_batches(first, last):
                    self._acknowledge_batch(member, batch, first, last, types, limits, now)
        except ShareError:
            self._batches, self._find_next, self.tally = saved, saved_find_next, saved_tally
            raise
        self._advance()

    def _acknowledged_batches(self, first: int, last: int) -> list[Batch]:
        floor = self._floor(first)
        if floor is None:
            if first < self.start_offset <= last:
                floor = self._floor(self.start_offset)
            if floor is None:
                raise ShareError(ErrorCode.INVALID_RECORD_STATE,
                                 "Batch record not found. The request batch offsets are not found in the cache.")
        cached = self._range(floor.first, last)
        if cached[-1].last < first:
            raise ShareError(ErrorCode.INVALID_REQUEST,
                             "Batch record not found. The first offset in request is past acquired records.")
        if last > cached[-1].last:
            raise ShareError(ErrorCode.INVALID_REQUEST,
                             "Batch record not found. The last offset in request is past acquired records.")
        return cached

    def _acknowledge_batch(self, member: str, batch: Batch, first: int, last: int, types, limits: Limits,
                           now: int) -> None:
        if batch.last < self.start_offset:
            return
        if batch.offsets is None:
            if batch.whole.member == NO_MEMBER:
                raise ShareError(ErrorCode.INVALID_RECORD_STATE,
                                 "The batch cannot be acknowledged. The batch is not in the acquired state.")
            if batch.whole.member != member:
                raise ShareError(ErrorCode.INVALID_RECORD_STATE, "Member is not the owner of batch record")
        whole = first <= batch.first and batch.last <= last
        start_inside = batch.first < self.start_offset <= batch.last
        if not whole or batch.offsets is not None or len(types) > 1 or start_inside:
            if batch.offsets is None:
                if batch.whole.state != ACQUIRED:
                    raise ShareError(ErrorCode.INVALID_RECORD_STATE, "The batch cannot be acknowledged. "
                                     "The subset batch is not in the acquired state.")
                batch.split()
            for offset, d in batch.offsets.items():
                if offset < first or offset < self.start_offset:
                    continue
                if offset > last:
                    break
                if d.state != ACQUIRED:
                    raise ShareError(ErrorCode.INVALID_RECORD_STATE,
                                     "The offset cannot be acknowledged. The offset is not acquired.")
                if d.member != member:
                    raise ShareError(ErrorCode.INVALID_RECORD_STATE, "Member is not the owner of offset")
                self._apply(d, types[offset - first] if len(types) > 1 else types[0], limits, now, 1)
            return
        if batch.whole.state != ACQUIRED:
            raise ShareError(ErrorCode.INVALID_RECORD_STATE,
                             "The batch cannot be acknowledged. The batch is not in the acquired state.")
        self._apply(batch.whole, types[0], limits, now, batch.last - batch.first + 1)

    def _apply(self, d: Delivery, ack_type: int, limits: Limits, now: int, records: int) -> None:
        if ack_type == RENEW:
            if not limits.renew_enabled:
                raise ShareError(ErrorCode.INVALID_RECORD_STATE,
                                 "Renewing acquisition locks is not enabled for the group.")
            d.deadline = now + limits.lock_duration_ms
            return
        state = self._release(d, _ACKED_STATE[ack_type], limits)
        self.tally[_OUTCOME[ack_type] if state != ARCHIVED or ack_type != RELEASE else "archived"] += records

    def _release(self, d: Delivery, state: int, limits: Limits) -> int:
        """The state the record (or batch) goes to: ``state``, or archived at the limit."""
        if state == AVAILABLE and d.count >= limits.delivery_count_limit:
            state = ARCHIVED
        d.state, d.member, d.deadline = state, NO_MEMBER, None
        if state == AVAILABLE:
            self._find_next = True
            d.settling = self._settling
        return state

    # --- releasing ------------------------------------------------------------------------
    def settle(self) -> None:
        """The releases of the last acknowledgement are written: those records may go again."""
        self._settling = False
        for batch in self._batches.values():
            for _, _, d in batch.deliveries():
                if d.settling:
                    d.settling, self._find_next = False, True

    def release_member(self, member: str, limits: Limits) -> bool:
        """A member's session ended: what it holds is available again (archived at the limit,
        or below the start offset). Whether anything changed."""
        changed = False
        for batch in self.batches():
            if batch.offsets is None and batch.whole.member == member and batch.whole.state == ACQUIRED \
                    and batch.first < self.start_offset <= batch.last:
                batch.split()
            for first, last, d in batch.deliveries():
                if d.state == ACQUIRED and d.member in (member, NO_MEMBER):
                    self._release(d, ARCHIVED if last < self.start_offset else AVAILABLE, limits)
                    changed = True
        if changed:
            self._advance()
        return changed

    def expire_locks(self, now: int, limits: Limits) -> list[tuple[int, int, int]]:
        """Locks whose deadline has passed: their records are available again (archived at the
        delivery limit). The (first, last, state) released."""
        expired = []
        for batch in self.batches():
            if batch.offsets is None and batch.whole.deadline is not None and batch.whole.deadline <= now \
                    and batch.first < self.start_offset <= batch.last:
                batch.split()
            for first, last, d in batch.deliveries():
                if d.state == ACQUIRED and d.deadline is not None and d.deadline <= now:
                    expired.append((first, last, self._release(
                        d, ARCHIVED if last < self.start_offset else AVAILABLE, limits)))
        if expired:
            self._advance()
        return expired

    def _advance(self) -> None:
        """Kafka's maybeUpdateCachedStateAndOffsets: the start offset moves past the records
        whose delivery is complete, and whole batches behind it leave the cache."""
        self._to_write = self._state_now()
        floor = self._floor(self.start_offset)
        if floor is None:
            return
        last_done = -1
        for batch in self.batches():
            stop = False
            for first, last, d in batch.deliveries():
                if last < self.start_offset:
                    continue
                if d.state not in TERMINAL:
                    stop = True
                    break
                last_done = last
            if stop:
                break
        if last_done < self.start_offset:
            return
        last_cached = self._batches[self._firsts[-1]].last
        if last_done == last_cached:
            self.start_offset = self.end_offset = last_cached + 1
            self._firsts, self._batches = [], {}
            return
        entry = self._floor(last_done)
        i = self._firsts.index(entry.first)
        if last_done == entry.last:
            self.start_offset = max(self.start_offset, self._firsts[i + 1])
            gone = self._firsts[:i + 1]
        else:
            self.start_offset = max(self.start_offset, last_done + 1)
            gone = self._firsts[:i]
        for first in gone:
            del self._batches[first]
        self._firsts = self._firsts[len(gone):]


def _copy(batch: Batch) -> Batch:
    return Batch(batch.first, batch.last, None if batch.whole is None else replace(batch.whole),
                 None if batch.offsets is None else {o: replace(d) for o, d in batch.offsets.items()})
