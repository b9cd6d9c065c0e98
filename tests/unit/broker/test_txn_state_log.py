"""The transaction service's state logs on disk: what a restart rebuilds, and their compaction."""

from __future__ import annotations

import itertools
import os

from broker.cluster.topology import TXN_TOPIC
from broker.txn_runtime.service import TransactionService
from coordinator.transactions.config import TransactionConfig
from coordinator.transactions.metadata import TxnState
from offsets_log.log import ShardLog
from protocol.errors import ErrorCode


def service(data_dir, **config) -> TransactionService:
    ids = itertools.count(100)
    return TransactionService(str(data_dir), TransactionConfig(**config), lambda: next(ids),
                              write_data_marker=lambda *a: ErrorCode.NONE,
                              group_runner=lambda p: None)


async def test_restart_rebuilds_state_and_compaction_keeps_each_ids_last_record(tmp_path, nursery):
    first = service(tmp_path, transaction_state_log_segment_bytes=300)
    await nursery.start(first.run)
    for _ in range(40):
        assert (await first.init_producer_id("a", 60_000, None)).error == ErrorCode.NONE
    assert await first.add_partitions("a", 100, 39, [("t", 0)]) == ErrorCode.NONE
    assert (await first.init_producer_id("b", 60_000, None)).producer_id == 101
    partition = first.coordinator.partition_for("a")
    before = len(ShardLog(os.path.join(str(tmp_path), f"{TXN_TOPIC}-{partition}")).read_all())
    await first.compact()
    first.close()
    after = ShardLog(os.path.join(str(tmp_path), f"{TXN_TOPIC}-{partition}")).read_all()
    assert len(after) < before / 4
    again = service(tmp_path)
    await nursery.start(again.run)
    a, b = again.coordinator.txns["a"], again.coordinator.txns["b"]
    assert (a.state, a.producer_id, a.producer_epoch, a.partitions) == (TxnState.ONGOING, 100, 39, {("t", 0)})
    assert (b.state, b.producer_epoch) == (TxnState.EMPTY, 0)
