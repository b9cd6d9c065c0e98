"""Load a shard from its offsets log: replay every record in log order, then arm the timers.

Live operation and loading share ``Shard.replay``, so what a restart rebuilds is what the
shard held when the records were written. Records that do not decode (an unknown record type,
say a KIP-848 group record, or bad bytes) are skipped with a warning, as Kafka's loader skips
unknown record types.
"""

from __future__ import annotations

import logging

from offsets_log.errors import RecordError
from offsets_log.log import ShardLog
from offsets_log.records import decode

from coordinator.result import CoordinatorResult
from coordinator.shard import Shard

log = logging.getLogger("groupbroker.coordinator")


def load_shard(shard: Shard, shard_log: ShardLog, now: int) -> CoordinatorResult:
    """Replay ``shard_log`` into ``shard`` (fresh) and finish with ``shard.loaded(now)``."""
    replayed = skipped = 0
    for offset, record in shard_log.read_all():
        try:
            typed = decode(record)
        except RecordError as e:
            log.warning("shard %d: skipping record at offset %d: %s", shard.shard_id, offset, e)
            skipped += 1
            continue
        shard.replay(typed)
        replayed += 1
    if replayed or skipped:
        log.info("shard %d: replayed %d records (%d skipped)", shard.shard_id, replayed, skipped)
    return shard.loaded(now)
