"""When shard logs are fsynced: Kafka's ``log.flush.*`` settings, and one fsync pass.

Kafka acknowledges a write once it is in the log (the operating system holds it, so it
survives the broker process being killed, though not a power cut) and fsyncs only when a
log holds ``log.flush.interval.messages`` unflushed records (checked as it appends, so that
append waits for the fsync) or when the periodic flusher, running every
``log.flush.scheduler.interval.ms``, finds a log unflushed for ``log.flush.interval.ms``.
Both default to never. ``log.flush.interval.messages=1`` is fsync-before-acknowledge.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from .errors import OffsetsLogError

if TYPE_CHECKING:
    from .log import ShardLog

NEVER = 2**63 - 1        # Kafka's Long.MAX_VALUE default for every log.flush.* setting


@dataclass(frozen=True)
class FlushPolicy:
    interval_messages: int = NEVER       # log.flush.interval.messages
    interval_ms: int | None = None       # log.flush.interval.ms (None: the scheduler's interval)
    scheduler_interval_ms: int = NEVER   # log.flush.scheduler.interval.ms

    @property
    def age_ms(self) -> int:
        """How long records may stay unflushed before the periodic flusher takes them."""
        return self.scheduler_interval_ms if self.interval_ms is None else self.interval_ms

    @property
    def periodic(self) -> bool:
        return self.scheduler_interval_ms < NEVER

    def due(self, unflushed: int) -> bool:
        """Whether an append leaving ``unflushed`` records must wait for an fsync."""
        return unflushed >= self.interval_messages


def flush_pass(logs: Sequence[ShardLog]) -> list[int | OffsetsLogError]:
    """fsync each log in turn (in one worker thread): the offset each fsync covers, or why
    it failed. One pass serves every record appended to any of them before it began."""
    results: list[int | OffsetsLogError] = []
    for shard_log in logs:
        try:
            results.append(shard_log.sync())
        except OffsetsLogError as e:
            results.append(e)
    return results
