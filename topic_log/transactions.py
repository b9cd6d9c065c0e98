"""A partition's transactions (Kafka's ProducerStateManager ongoing transactions and its
TransactionIndex): which producers have a transaction open and where it began, so the last
stable offset is known, and the aborted ones, which read_committed fetches are told about.

Rebuilt from the batches on every open (the log is scanned then anyway), so it needs no file
of its own: a transaction whose marker was never written stays open until the coordinator
writes it.
"""

from __future__ import annotations

from typing import NamedTuple

from protocol.control_records import parse_control
from protocol.exceptions import DecodeError
from protocol.records import BatchHeader


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int


class PartitionTransactions:
    def __init__(self) -> None:
        self.ongoing: dict[int, int] = {}            # producer id -> first offset
        self.aborted: list[AbortedTxn] = []          # in marker order, so by last offset

    def record(self, header: BatchHeader, base_offset: int, batch=None) -> int | None:
        """Note one written batch (``batch``: its bytes, needed for a marker); a marker's
        coordinator epoch is returned."""
        if not header.is_transactional:
            return None
        pid = header.producer_id
        if not header.is_control:
            self.ongoing.setdefault(pid, base_offset)
            return None
        try:
            commit, coordinator_epoch = parse_control(batch)
        except DecodeError:
            return None
        first = self.ongoing.pop(pid, None)
        if first is not None and not commit:
            self.aborted.append(AbortedTxn(pid, first, base_offset))
        return coordinator_epoch

    def last_stable_offset(self, high_watermark: int) -> int:
        """The first offset of the earliest open transaction, else the high watermark."""
        return min(self.ongoing.values(), default=high_watermark)

    def aborted_between(self, start: int, end: int) -> list[AbortedTxn]:
        """Aborted transactions that overlap offsets [start, end) (Kafka's
        collectAbortedTransactions for a fetch from ``start`` up to ``end``)."""
        return [a for a in self.aborted if a.last_offset >= start and a.first_offset < end]

    def evict_below(self, log_start_offset: int) -> None:
        self.aborted = [a for a in self.aborted if a.last_offset >= log_start_offset]
