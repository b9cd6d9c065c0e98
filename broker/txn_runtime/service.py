"""The transaction coordinator service: drives :class:`coordinator.transactions.coordinator.
TransactionCoordinator` over the ``__transaction_state-N`` logs and writes the markers.

A decision's transit is written to its id's partition log (a plain buffered write, fsynced when
``log.flush.interval.messages`` asks for every message) before the answer, as Kafka appends
before it answers. Ending a transaction is Kafka's sequence: write PrepareCommit/PrepareAbort,
write a marker into every partition of the transaction (data partitions through the topic
store; ``__consumer_offsets`` partitions through their group shard, which makes the pending
offsets visible or drops them), then write CompleteCommit/CompleteAbort. Meanwhile every
request for the id gets CONCURRENT_TRANSACTIONS. Kafka answers EndTxn as soon as the Prepare
state is written; we answer once the markers are written too (at most MARKERS_AWAITED_S
later), because the markers of one broker take microseconds and a producer that begins its
next transaction at once would otherwise meet CONCURRENT_TRANSACTIONS and back off (a 25x
slower loop in bench/transactions.py). The ``hold-markers`` fault answers first, as Kafka,
to reproduce that window. A transaction found prepared but not completed when the logs load
(a crash between EndTxn and its markers) has its markers written again, so it completes as
Kafka's new coordinator completes it.
"""

from __future__ import annotations

import logging
import time
from typing import Callable

import trio

from coordinator.routing import shard_for
from coordinator.transactions.config import TransactionConfig
from coordinator.transactions.coordinator import Decision, TransactionCoordinator
from coordinator.transactions.metadata import INT16_MAX, IllegalTransition, Transit, TxnState
from coordinator.transactions.records import decode_record, encode_record
from offsets_log.compaction import compact
from offsets_log.errors import OffsetsLogError
from offsets_log.log import ShardLog
from protocol.errors import ErrorCode
from protocol.logtext import safe

from broker.cluster.log_homes import exists, open_log
from broker.cluster.topology import GROUP_TOPIC, TXN_TOPIC, Node, Topology
from broker.faults.rules import FaultError

log = logging.getLogger("groupbroker.transactions")
E = ErrorCode
#: the coordinator epoch of every transaction-state partition: one broker, led since epoch 0
COORDINATOR_EPOCH = 0
#: retriable marker errors are retried after this long, as Kafka's marker channel retries
MARKER_RETRY_S = 0.1
#: marker answers that end its sending: written, or never to be (Kafka drops the marker too)
_MARKER_DONE = frozenset({E.NONE, E.UNKNOWN_TOPIC_OR_PARTITION, E.INVALID_PRODUCER_EPOCH,
                          E.TRANSACTION_COORDINATOR_FENCED})
#: a transaction version 2 produce's add is retried this often while its transaction ends, for
#: up to this long (Kafka's add.partitions.to.txn.retry.backoff.ms and .backoff.max.ms)
ADD_RETRY_BACKOFF_S = 0.02
ADD_RETRY_FOR_S = 0.1
#: how long an EndTxn answer waits for its markers before it goes anyway (a shard loading)
MARKERS_AWAITED_S = 0.5
#: how often the state logs are checked for sealed segments to compact
COMPACTION_CHECK_MS = 60_000


def group_partition(group_id: str, offsets_partitions: int) -> tuple[str, int]:
    """The ``__consumer_offsets`` partition of a group: what AddOffsetsToTxn adds."""
    return GROUP_TOPIC, shard_for(group_id, offsets_partitions)


def _now_ms() -> int:
    return int(time.time() * 1000)


class TransactionService:
    """``write_data_marker(topic, partition, producer_id, epoch, commit)`` writes a marker into a
    topic partition (an ErrorCode back: UNKNOWN_TOPIC_OR_PARTITION means gone, skip it);
    ``group_runner(partition)`` is the shard runner of a ``__consumer_offsets`` partition;
    ``topology`` says which node's folder each state log lives in (one node: the data dir)."""

    def __init__(self, data_dir: str, config: TransactionConfig, new_producer_id: Callable[[], int], *,
                 write_data_marker: Callable[..., ErrorCode], group_runner: Callable[[int], object],
                 fsync_each: bool = False, now_ms: Callable[[], int] = _now_ms,
                 topology: Topology | None = None, transaction_version: int = 2):
        self.data_dir, self.config = data_dir, config
        self.topology = topology or Topology([Node(0, "", 0)])
        self.coordinator = TransactionCoordinator(config, new_producer_id, transaction_version)
        self.write_data_marker, self.group_runner = write_data_marker, group_runner
        self.fsync_each, self.now_ms = fsync_each, now_ms
        self.logs: dict[int, ShardLog] = {}
        self.loaded = False
        self.loading: set[int] = set()      # partitions reloading after a coordinator move
        self._moving = trio.Lock()
        self.markers_held = False           # a fault: markers wait until released
        self._markers_released = trio.Event()
        self._nursery: trio.Nursery | None = None
        self._compacted: dict[int, tuple[int, ...]] = {}      # partition -> sealed bases then

    # --- loading ------------------------------------------------------------------------------
    def _open_existing(self) -> list[tuple[str, Transit | None]]:
        """Open every partition log on disk; their records in order (worker thread)."""
        replayed = []
        for p in range(self.config.transaction_state_log_num_partitions):
            replayed.extend(self._read(p))
        return replayed

    def _read(self, partition: int) -> list[tuple[str, Transit | None]]:
        """The records of a partition's log, opened where it belongs (none if it has no log)."""
        if not exists(self.data_dir, TXN_TOPIC, partition):
            return []
        return [decode_record(r) for _, r in self._open(partition).read_all()]

    def _open(self, partition: int) -> ShardLog:
        shard_log = self.logs.get(partition)
        if shard_log is None:
            shard_log = self.logs[partition] = open_log(
                self.data_dir, self.topology, TXN_TOPIC, partition,
                segment_bytes=self.config.transaction_state_log_segment_bytes)
        return shard_log

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Load the logs, finish what a crash interrupted, then run the timers."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            for tid, transit in await trio.to_thread.run_sync(self._open_existing):
                self.coordinator.replay(tid, transit)
            self.loaded = True
            log.info("transaction state loaded: %d transactional id(s)", len(self.coordinator.txns))
            self._finish(self.coordinator.unfinished())
            task_status.started()
            nursery.start_soon(self._every, self.config.transaction_abort_timed_out_transaction_cleanup_interval_ms,
                               self.abort_timed_out)
            nursery.start_soon(self._every, self.config.transaction_remove_expired_transaction_cleanup_interval_ms,
                               self.remove_expired)
            nursery.start_soon(self._every, COMPACTION_CHECK_MS, self.compact)

    def _finish(self, unfinished) -> None:
        """Write again the markers of transactions a load found prepared but not completed."""
        for meta in unfinished:
            complete = self.coordinator.markers_begin(self.now_ms(), meta.transactional_id)
            self._nursery.start_soon(self._send_markers, meta.transactional_id, meta.producer_id,
                                     meta.producer_epoch, meta.state == TxnState.PREPARE_COMMIT,
                                     sorted(meta.partitions), complete, meta.client_tv)

    def move(self, partition: int) -> None:
        """A coordinator failover of one partition (its leader changed): see :meth:`_move`."""
        self.loading.add(partition)
        self._nursery.start_soon(self._move, partition)

    async def _move(self, partition: int) -> None:
        """Kafka's unload and load of a transaction-state partition: its ids answer
        COORDINATOR_LOAD_IN_PROGRESS; once no write or marker of theirs is in flight (what the
        old coordinator started, it finishes), the log is closed, opened in its new home and
        replayed in place of their state."""
        started = trio.current_time()
        async with self._moving:
            self.loading.add(partition)
            while self.coordinator.busy(partition):
                await trio.sleep(MARKER_RETRY_S / 10)
            old = self.logs.pop(partition, None)
            try:
                records = await trio.to_thread.run_sync(self._reopen, partition, old)
            except (OffsetsLogError, OSError) as e:   # its ids stay as they were, served as before
                log.error("%s-%d: reloading after a coordinator move failed: %s", TXN_TOPIC, partition, e)
                records = None
            if records is not None:
                self.coordinator.forget_partition(partition)
                for tid, transit in records:
                    self.coordinator.replay(tid, transit)
            self.loading.discard(partition)
        self._finish([m for m in self.coordinator.unfinished()
                      if self.coordinator.partition_for(m.transactional_id) == partition])
        log.info("%s-%d: loaded after a coordinator move in %.1f ms (%d record(s))", TXN_TOPIC, partition,
                 (trio.current_time() - started) * 1000, len(records or ()))

    def _reopen(self, partition: int, old: ShardLog | None) -> list[tuple[str, Transit | None]]:
        """In a worker thread: close the log, then read it where it now belongs."""
        if old is not None:
            old.close()
        return self._read(partition)

    @staticmethod
    async def _every(interval_ms: int, job) -> None:
        while True:
            await trio.sleep(interval_ms / 1000)
            await job()

    async def compact(self) -> None:
        """Compact each log that rolled a segment since it was last compacted (the state log
        is compacted in Kafka too: only each id's last record matters)."""
        for partition, shard_log in list(self.logs.items()):
            if partition in self.loading:
                continue
            sealed = tuple(shard_log.bases[:-1])
            if sealed and self._compacted.get(partition) != sealed:
                try:
                    await trio.to_thread.run_sync(compact, shard_log, self.now_ms())
                except (OffsetsLogError, OSError) as e:       # the old segments stay
                    log.error("%s: compaction failed: %s", shard_log.directory, e)
                self._compacted[partition] = tuple(shard_log.bases[:-1])

    def close(self) -> None:
        for shard_log in self.logs.values():
            try:
                shard_log.sync()
            except OffsetsLogError as e:
                log.error("%s: final fsync failed: %s", shard_log.directory, e)
            shard_log.close()

    # --- writing ------------------------------------------------------------------------------
    async def _write(self, tid: str, transit: Transit) -> ErrorCode:
        """Append ``transit`` to its partition log and apply it; NOT_COORDINATOR if the write
        fails (as Kafka answers when its append fails), with nothing changed."""
        try:
            shard_log = self._open(self.coordinator.partition_for(tid))
            shard_log.append([encode_record(tid, transit, self.coordinator.transaction_version)], self.now_ms())
            if self.fsync_each:
                await trio.to_thread.run_sync(shard_log.sync)
        except OffsetsLogError as e:
            log.error("transactional id %s: writing %s failed: %s", safe(tid), transit.state.display, e)
            self.coordinator.failed(tid, transit)
            return E.NOT_COORDINATOR
        self.coordinator.written(tid, transit)
        return E.NONE

    def _refusal(self, tid: str | None = None) -> ErrorCode | None:
        """COORDINATOR_LOAD_IN_PROGRESS while the logs load (``tid``'s partition, or any for
        requests about every id)."""
        if not self.loaded:
            return E.COORDINATOR_LOAD_IN_PROGRESS
        if self.loading and (tid is None or self.coordinator.partition_for(tid) in self.loading):
            return E.COORDINATOR_LOAD_IN_PROGRESS
        return None

    # --- requests -----------------------------------------------------------------------------
    async def init_producer_id(self, tid: str, timeout_ms: int,
                               expected: tuple[int, int] | None) -> Decision:
        if (refused := self._refusal(tid)) is not None:
            return Decision(refused)
        decision = self.coordinator.init_producer_id(self.now_ms(), tid, timeout_ms, expected)
        if decision.transit is None:
            return decision
        if decision.fence:
            meta = self.coordinator.txns[tid]
            log.info("transactional id %s: InitProducerId fences producer %d at epoch %d; its open "
                     "transaction is aborted (the caller retries on CONCURRENT_TRANSACTIONS)", safe(tid),
                     meta.producer_id, decision.transit.producer_epoch)
            ended = await self._abort_fenced(tid, meta.producer_id, decision.transit.producer_epoch)
            return Decision(ended.error if ended.error != E.NONE else E.CONCURRENT_TRANSACTIONS)
        error = await self._write(tid, decision.transit)
        if error != E.NONE:
            return Decision(error)
        log.info("transactional id %s: producer id %d, epoch %d", safe(tid), decision.producer_id,
                 decision.producer_epoch)
        return decision

    async def add_partitions(self, tid: str, producer_id: int, epoch: int, partitions,
                             client_tv: int = 0) -> ErrorCode:
        if (refused := self._refusal(tid)) is not None:
            return refused
        decision = self.coordinator.add_partitions(self.now_ms(), tid, producer_id, epoch, partitions, client_tv)
        if decision.transit is None:
            return decision.error
        return await self._write(tid, decision.transit)

    async def add_for_produce(self, tid: str, producer_id: int, epoch: int, partitions) -> ErrorCode:
        """A transaction version 2 write (Produce v12+, TxnOffsetCommit v5) adds its partitions
        itself, as Kafka's partition leader adds them through AddPartitionsToTxn v4+. The
        transaction's end may still be under way (CONCURRENT_TRANSACTIONS): the add is tried again
        every ADD_RETRY_BACKOFF_S for up to ADD_RETRY_FOR_S, as Kafka's leader does for a produce."""
        waited = 0.0
        while True:
            error = await self.add_partitions(tid, producer_id, epoch, partitions, 2)
            if error != E.CONCURRENT_TRANSACTIONS or waited >= ADD_RETRY_FOR_S:
                return error
            await trio.sleep(ADD_RETRY_BACKOFF_S)
            waited += ADD_RETRY_BACKOFF_S

    def verify(self, tid: str, producer_id: int, epoch: int, topic: str, partition: int) -> ErrorCode:
        """A transactional produce's partition check (Kafka's verification)."""
        return self.verify_partitions(tid, producer_id, epoch, [(topic, partition)])[(topic, partition)]

    def verify_partitions(self, tid: str, producer_id: int, epoch: int, partitions) -> dict:
        """Whether each partition is in the producer's transaction (AddPartitionsToTxn v4+ with
        verify_only)."""
        if (refused := self._refusal(tid)) is not None:
            return dict.fromkeys(partitions, refused)
        return self.coordinator.verify_partitions(tid, producer_id, epoch, partitions)

    async def end_transaction(self, tid: str, producer_id: int, epoch: int, commit: bool, *,
                              from_client: bool = True, client_tv: int = 0) -> Decision:
        """EndTxn (``client_tv`` 2 from v5) or the coordinator's own abort; the decision carries
        the producer id and epoch the producer goes on with (transaction version 2 bumps it)."""
        if (refused := self._refusal(tid)) is not None:
            return Decision(refused)
        try:
            decision = self.coordinator.end_transaction(self.now_ms(), tid, producer_id, epoch, commit,
                                                        from_client=from_client, client_tv=client_tv)
        except IllegalTransition:
            log.exception("transactional id %s: EndTxn found an impossible state", safe(tid))
            return Decision(E.UNKNOWN_SERVER_ERROR)
        if decision.transit is None:
            return decision
        error = await self._write(tid, decision.transit)
        if error != E.NONE:
            return Decision(error)
        meta = self.coordinator.txns[tid]
        complete = self.coordinator.markers_begin(self.now_ms(), tid)
        partitions = sorted(decision.transit.partitions)
        log.debug("transactional id %s: %s producer %d epoch %d over %d partition(s)", safe(tid),
                  "committing" if commit else "aborting", meta.producer_id, meta.producer_epoch,
                  len(partitions))
        if complete.producer_id != meta.producer_id:
            log.info("transactional id %s: producer %d's epochs are exhausted; its transaction ends at epoch %d "
                     "and producer id %d takes over at epoch 0", safe(tid), meta.producer_id, meta.producer_epoch,
                     complete.producer_id)
        done = trio.Event()
        self._nursery.start_soon(self._send_markers, tid, meta.producer_id, meta.producer_epoch,
                                 commit, partitions, complete, meta.client_tv, done)
        if not self.markers_held:
            with trio.move_on_after(MARKERS_AWAITED_S):
                await done.wait()
        return Decision(producer_id=complete.producer_id, producer_epoch=complete.producer_epoch)

    async def _abort_fenced(self, tid: str, producer_id: int, fenced_epoch: int) -> Decision:
        """The coordinator's own abort of a fenced transaction (a timeout, an InitProducerId), in
        the finalized transaction version, as Kafka's."""
        return await self.end_transaction(tid, producer_id, fenced_epoch, False, from_client=False,
                                          client_tv=self.coordinator.transaction_version)

    def describe(self, tid: str):
        """DescribeTransactions of one id: its metadata, or an ErrorCode."""
        return self._refusal(tid) or self.coordinator.describe(tid)

    def list(self, producer_ids: set[int], states: set[str], min_duration_ms: int, id_pattern: str | None = None):
        """ListTransactions: (rows, unknown state filters), or an ErrorCode (while loading, or
        for an id pattern that is no regular expression)."""
        return self._refusal() or self.coordinator.list(self.now_ms(), producer_ids, states, min_duration_ms,
                                                        id_pattern)

    # --- markers ------------------------------------------------------------------------------
    async def _send_markers(self, tid: str, producer_id: int, epoch: int, commit: bool,
                            partitions: list[tuple[str, int]], complete: Transit, client_tv: int,
                            done: trio.Event | None = None) -> None:
        """Kafka's TransactionMarkerChannelManager: a marker into every partition, retried while
        the partition cannot take it (a group shard loading), skipped once it is gone; then the
        completion is written. A transaction version 2 marker carries the bumped epoch, which
        the partition requires to be newer than its producer's."""
        if self.markers_held:
            await self._markers_released.wait()
        for topic, partition in partitions:
            while True:
                if topic == GROUP_TOPIC:
                    error = await self.group_runner(partition).complete_transaction(
                        producer_id, epoch, commit, COORDINATOR_EPOCH)
                else:
                    error = self.write_data_marker(topic, partition, producer_id, epoch, commit,
                                                   COORDINATOR_EPOCH, client_tv)
                if error in _MARKER_DONE:
                    break
                log.debug("transactional id %s: marker for %s-%d: %s; retrying", safe(tid), topic,
                          partition, error.name)
                await trio.sleep(MARKER_RETRY_S)
        while await self._write(tid, complete) != E.NONE:
            await trio.sleep(1)           # the log reopens on the next append; Kafka retries too
            complete = self.coordinator.markers_begin(self.now_ms(), tid)
        log.debug("transactional id %s: %s", safe(tid), complete.state.display)
        if done is not None:
            done.set()

    def hold_markers(self, held: bool) -> None:
        """A fault: end transactions but hold their markers (CONCURRENT_TRANSACTIONS meanwhile)."""
        self.markers_held = held
        if held:
            self._markers_released = trio.Event()
        else:
            self._markers_released.set()

    # --- faults -------------------------------------------------------------------------------
    async def abort(self, tid: str) -> str:
        """Abort the open transaction of ``tid`` as a timeout would (the fault injector's)."""
        meta = self._known(tid)
        if meta.state != TxnState.ONGOING or meta.has_pending:
            raise FaultError(f"transactional id {tid} has no open transaction ({meta.state.display})")
        epoch = meta.prepare_fence().producer_epoch
        ended = await self._abort_fenced(tid, meta.producer_id, epoch)
        if ended.error != E.NONE:
            raise FaultError(f"transactional id {tid}: the abort failed with {ended.error.name}")
        return (f"transactional id {tid}: transaction aborted, producer {ended.producer_id} fenced at epoch "
                f"{ended.producer_epoch}")

    async def fence(self, tid: str) -> str:
        """Bump the epoch of ``tid`` as its next incarnation's InitProducerId would."""
        meta = self._known(tid)
        decided = await self.init_producer_id(tid, meta.timeout_ms, None)
        if decided.error not in (E.NONE, E.CONCURRENT_TRANSACTIONS):     # 51: it aborts meanwhile
            raise FaultError(f"transactional id {tid}: fencing failed with {decided.error.name}")
        return f"transactional id {tid}: producer {meta.producer_id} fenced, epoch now {meta.producer_epoch}"

    async def exhaust_epoch(self, tid: str) -> str:
        """Make the next version 2 end of ``tid`` bump its epoch to the last one a producer may
        hold (32766), so that the end after it hands over a new producer id: what years of
        transactions would do, in two."""
        meta = self._known(tid)
        last = INT16_MAX - 1
        if meta.producer_epoch >= last:
            raise FaultError(f"transactional id {tid}: epoch {meta.producer_epoch} is already the last")
        self.coordinator.epoch_jumps[tid] = last
        return (f"transactional id {tid}: producer {meta.producer_id}'s next transaction version 2 end "
                f"bumps its epoch from {meta.producer_epoch} to {last}; the end after hands over a new producer id")

    def _known(self, tid: str):
        meta = self.coordinator.txns.get(tid) if self.loaded else None
        if meta is None:
            raise FaultError(f"transactional id {tid} is not known to the coordinator")
        return meta

    # --- timers -------------------------------------------------------------------------------
    async def abort_timed_out(self) -> None:
        for tid, producer_id, epoch in self.coordinator.timed_out(self.now_ms()):
            await self._abort_fenced(tid, producer_id, epoch)

    async def remove_expired(self) -> None:
        for tid, dead in self.coordinator.expired(self.now_ms()):
            if self.coordinator.partition_for(tid) in self.loading:
                self.coordinator.failed(tid, dead)       # expired by its next check
                continue
            try:
                self._open(self.coordinator.partition_for(tid)).append(
                    [encode_record(tid, None)], self.now_ms())
            except OffsetsLogError as e:
                log.error("transactional id %s: its tombstone was not written: %s", safe(tid), e)
                self.coordinator.failed(tid, dead)
                continue
            self.coordinator.written(tid, dead)
            log.info("transactional id %s expired", safe(tid))
