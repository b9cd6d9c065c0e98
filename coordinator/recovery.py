"""Load a shard from its offsets log: replay its records in log order, then arm the timers.

Live operation and loading share ``Shard.replay``, so what a restart rebuilds is what the
shard held when the records were written. Records that do not decode (an unknown record type,
say a KIP-848 group record, or bad bytes) are skipped with a warning, as Kafka's loader skips
unknown record types.

A plain offset commit that a later plain commit of the same key replaces is not replayed
(unless its group is not there yet: replaying it creates the group, at its commit's time). A
busy group's log is mostly such commits, so they are most of what a load would otherwise
decode; the state is the same (tests/unit/coordinator/test_coordinator_replay.py checks
every reload against the live shard), as compaction keeps only the latest record of a key.
"""

from __future__ import annotations

import logging

from offsets_log.errors import RecordError
from offsets_log.log import ShardLog
from offsets_log.records import commit_key_group, decode, is_offset_commit_key

from coordinator.result import CoordinatorResult
from coordinator.shard import Shard

log = logging.getLogger("groupbroker.coordinator")


def load_shard(shard: Shard, shard_log: ShardLog, now: int) -> CoordinatorResult:
    """Replay ``shard_log`` into ``shard`` (fresh) and finish with ``shard.loaded(now)``."""
    frames = list(shard_log.frames())
    latest = {f.key: f.offset for f in frames if f.producer_id < 0 and f.value is not None}
    has_group, groups_of_keys = shard.offset_manager.has_group, {}
    replayed = skipped = superseded = 0
    for frame in frames:
        key = frame.key
        try:
            if latest.get(key, frame.offset) != frame.offset and frame.producer_id < 0 \
                    and frame.value is not None and is_offset_commit_key(key):
                group = groups_of_keys.get(key)
                if group is None:
                    group = groups_of_keys[key] = commit_key_group(key)
                if has_group(group):
                    superseded += 1
                    continue
            typed = decode(frame)
        except RecordError as e:
            log.warning("shard %d: skipping record at offset %d: %s", shard.shard_id, frame.offset, e)
            skipped += 1
            continue
        shard.replay(typed)
        replayed += 1
    if frames:
        log.info("shard %d: replayed %d of %d records (%d replaced by later commits, %d skipped)",
                 shard.shard_id, replayed, len(frames), superseded, skipped)
    return shard.loaded(now)
