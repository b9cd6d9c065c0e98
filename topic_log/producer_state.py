"""Idempotent producers: producer-id allocation and per-partition sequence checks.

Follows Kafka's ProducerStateEntry / ProducerAppendInfo for data batches from clients: a
producer's state on a partition is its epoch and the metadata of its last
:data:`NUM_BATCHES_TO_RETAIN` batches, so a retried batch (same epoch, same sequence range)
is answered with its original offsets instead of being written twice. Transaction markers
carry no sequence: they only move the epoch on (topic_log/transactions.py keeps the
transactions themselves).
"""

from __future__ import annotations

import logging
import os
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from protocol.records import BatchHeader

from .errors import InvalidProducerEpoch, OutOfOrderSequence
from log_store.files import atomic_write

log = logging.getLogger(__name__)

NUM_BATCHES_TO_RETAIN = 5          # Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
INT32_MAX = 2**31 - 1


def last_sequence(base_sequence: int, last_offset_delta: int) -> int:
    """The batch's last sequence; sequences wrap from INT32_MAX to 0, as Kafka's do."""
    if base_sequence > INT32_MAX - last_offset_delta:
        return last_offset_delta - (INT32_MAX - base_sequence) - 1
    return base_sequence + last_offset_delta


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


class BatchMetadata(NamedTuple):
    """What a duplicate's answer needs: its sequence range, offsets and (max) timestamp."""
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass
class ProducerEntry:
    epoch: int = NO_PRODUCER_EPOCH
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN))
    coordinator_epoch: int = -1          # of the last transaction marker written for it
    last_timestamp: int = -1             # of its last batch, a marker's included (Kafka's lastTimestamp)

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def last_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1


class ProducerStateTable:
    """Sequence state of every idempotent producer on one partition.

    The partition log calls :meth:`check` before writing a produce request's batches and
    :meth:`record` for each batch once it has its offsets (also while scanning the log on
    open, which is how the state survives restarts).
    """

    def __init__(self) -> None:
        self._entries: dict[int, ProducerEntry] = {}

    def entry(self, producer_id: int) -> ProducerEntry | None:
        return self._entries.get(producer_id)

    def entries(self) -> list[tuple[int, ProducerEntry]]:
        """(producer id, entry) of every producer known on the partition."""
        return list(self._entries.items())

    def check(self, batches: Iterable[BatchHeader]) -> BatchMetadata | None:
        """Validate the epochs and sequences of batches about to be appended, in order.

        Returns the stored metadata when a batch duplicates one of its producer's retained
        batches (then nothing must be written: Kafka answers NONE with the original
        offsets). Raises :class:`InvalidProducerEpoch` or :class:`OutOfOrderSequence`.
        """
        staged: dict[int, tuple[int, int]] = {}          # producer id -> (epoch, last seq)
        for batch in batches:
            pid = batch.producer_id
            if pid < 0:
                continue
            current = self._entries.get(pid, ProducerEntry())
            duplicate = _find_duplicate(current, batch)
            if duplicate is not None:
                return duplicate
            epoch, last_seq = staged.get(pid, (current.epoch, current.last_seq))
            _check_batch(pid, batch, epoch, last_seq, current.epoch)
            staged[pid] = (batch.producer_epoch, last_sequence(batch.base_sequence, batch.last_offset_delta))
        return None

    def record(self, batch: BatchHeader, base_offset: int) -> None:
        """Remember a written batch (``base_offset`` is the one the log assigned)."""
        if batch.producer_id < 0:
            return
        entry = self._entries.setdefault(batch.producer_id, ProducerEntry())
        entry.last_timestamp = batch.max_timestamp
        if batch.is_control:             # a marker carries no sequence; a newer epoch resets them
            if batch.producer_epoch > entry.epoch:
                entry.batches.clear()
                entry.epoch = batch.producer_epoch
            return
        if entry.epoch != batch.producer_epoch:
            entry.batches.clear()
            entry.epoch = batch.producer_epoch
        entry.batches.append(BatchMetadata(
            batch.base_sequence, last_sequence(batch.base_sequence, batch.last_offset_delta),
            base_offset, base_offset + batch.last_offset_delta, batch.max_timestamp))

    def highest_producer_id(self) -> int:
        """The largest producer id with batches in this partition, -1 if none."""
        return max(self._entries, default=-1)

    def evict_below(self, log_start_offset: int) -> None:
        """Forget producers whose last batch fell out of the log (Kafka's truncateHead)."""
        gone = [pid for pid, e in self._entries.items() if e.last_offset < log_start_offset]
        for pid in gone:
            del self._entries[pid]


def _find_duplicate(entry: ProducerEntry, batch: BatchHeader) -> BatchMetadata | None:
    if batch.producer_epoch != entry.epoch:
        return None
    last = last_sequence(batch.base_sequence, batch.last_offset_delta)
    for meta in entry.batches:
        if meta.first_seq == batch.base_sequence and meta.last_seq == last:
            return meta
    return None


def _check_batch(pid: int, batch: BatchHeader, epoch: int, last_seq: int, stored_epoch: int) -> None:
    """ProducerAppendInfo.checkProducerEpoch + checkSequence for a client's data batch."""
    if batch.producer_epoch < epoch:
        raise InvalidProducerEpoch(
            f"producer {pid} epoch {batch.producer_epoch} is older than the last seen epoch {epoch}")
    if batch.producer_epoch != epoch:
        # A new epoch starts at sequence 0, unless nothing is known of the producer.
        if batch.base_sequence != 0 and epoch != NO_PRODUCER_EPOCH:
            raise OutOfOrderSequence(
                f"producer {pid} new epoch {batch.producer_epoch} starts at sequence "
                f"{batch.base_sequence}, not 0")
    elif stored_epoch != NO_PRODUCER_EPOCH and not _in_sequence(last_seq, batch.base_sequence):
        raise OutOfOrderSequence(
            f"producer {pid} sequence {batch.base_sequence} does not follow {last_seq}")


class ProducerIds:
    """Allocates producer ids that are never handed out twice, even across restarts.

    Ids are reserved in blocks (as Kafka's controller does) and the end of the reserved block
    is persisted atomically in ``<data-dir>/producer_ids`` before any id of it is returned,
    so a restart continues after the block and a crash only skips ids.

    If that file cannot be read (corrupt, not a file), the last reservation is unknown, and
    handing out an id twice would let a new producer's batches be taken for a live producer's
    duplicates. Allocation then resumes :data:`UNREADABLE_JUMP` past ``highest_in_use`` (the
    largest id in any partition's producer state, which the caller passes): ids of producers
    whose batches are gone from every log, or were reserved but not yet used, lie below that
    by far less than a trillion, and the int64 id space has room for millions of such jumps.
    """

    BLOCK = 1000
    FILE = "producer_ids"
    UNREADABLE_JUMP = 1 << 40

    def __init__(self, data_dir: str | os.PathLike[str], *, highest_in_use: int = -1) -> None:
        self._path = os.path.join(os.fspath(data_dir), self.FILE)
        try:
            with open(self._path, encoding="ascii") as f:
                self._reserved = int(f.read().strip())
            if self._reserved < 0:
                raise ValueError(f"negative reservation {self._reserved}")
        except FileNotFoundError:
            self._reserved = 0
        except (OSError, ValueError) as exc:        # UnicodeDecodeError is a ValueError
            self._reserved = max(highest_in_use + 1, 0) + self.UNREADABLE_JUMP
            log.error("%s is unreadable (%s): the last reserved producer id is unknown, so ids "
                      "continue at %d, far past the highest in use (%d)", self._path, exc,
                      self._reserved, highest_in_use)
        self._next = self._reserved

    def allocate(self) -> int:
        if self._next >= self._reserved:
            self._persist(self._next + self.BLOCK)
        pid = self._next
        self._next += 1
        return pid

    def _persist(self, reserved: int) -> None:
        atomic_write(self._path, f"{reserved}\n")
        self._reserved = reserved
        log.debug("reserved producer ids up to %d", reserved)
