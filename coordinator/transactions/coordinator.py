"""The transaction coordinator's decisions (Kafka's TransactionCoordinator), without I/O.

Every transactional id lives in the transaction-state partition ``abs(javaHashCode(id)) % 50``
(coordinator.routing, as groups); the driver (broker/txn_runtime/) owns the logs of those partitions and the markers. Each request
method returns a :class:`Decision`: an error, or a :class:`Transit` to write. The driver writes
it to the id's partition log and calls :meth:`TransactionCoordinator.written` (or
:meth:`failed`), then answers. Checks and error codes follow Kafka, in its order. Both
transaction versions are spoken, each request in the one its API version names (EndTxn v5,
AddPartitionsToTxn v4+: version 2, which bumps the epoch at every end); the cluster's finalized
``transaction.version`` decides only how the coordinator itself aborts (timeouts, fences) and
which record version it writes, as in Kafka. Time is milliseconds, passed in.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable, Iterable

from protocol.errors import ErrorCode
from protocol.logtext import safe

from coordinator.java_order import hash_map_order
from coordinator.re2j import InvalidRegex, compile_re2j
from coordinator.routing import shard_for
from coordinator.transactions.config import TransactionConfig
from coordinator.transactions.metadata import (EXPIRABLE, INT16_MAX, NO_PRODUCER_EPOCH, NO_PRODUCER_ID,
                                               IllegalTransition, Transit, TxnMetadata, TxnState,
                                               epoch_exhausted)

log = logging.getLogger("groupbroker.transactions")
E = ErrorCode
S = TxnState


@dataclass(slots=True)
class Decision:
    """What a request decided: ``transit`` to write (then :meth:`TransactionCoordinator.written`),
    or only an answer. ``fence``: an InitProducerId that found a transaction open; its transit is
    an epoch fence, to be carried out as an abort (:meth:`TransactionCoordinator.end_transaction`
    with ``from_client=False``) before the client is told to retry."""
    error: ErrorCode = E.NONE
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    transit: Transit | None = None
    fence: bool = False


@dataclass(frozen=True, slots=True)
class Listed:
    """One row of ListTransactions."""
    transactional_id: str
    producer_id: int
    state: TxnState


class TransactionCoordinator:
    def __init__(self, config: TransactionConfig, new_producer_id: Callable[[], int], transaction_version: int = 2):
        self.config = config
        self.new_producer_id = new_producer_id
        #: the finalized transaction.version: the one the coordinator's own aborts use
        self.transaction_version = transaction_version
        #: a fault: transactional id -> the epoch its next version 2 end bumps to (not the next one)
        self.epoch_jumps: dict[str, int] = {}
        self.txns: dict[str, TxnMetadata] = {}

    def partition_for(self, transactional_id: str) -> int:
        """Kafka's partitionFor: the id's ``__transaction_state`` partition."""
        return shard_for(transactional_id, self.config.transaction_state_log_num_partitions)

    # --- replay -------------------------------------------------------------------------------
    def replay(self, transactional_id: str, transit: Transit | None) -> None:
        """Apply one transaction-log record (``None``: the id's tombstone)."""
        if transit is None:
            self.txns.pop(transactional_id, None)
        else:
            self.txns[transactional_id] = TxnMetadata.from_transit(transactional_id, transit)

    def forget_partition(self, partition: int) -> None:
        """Drop the ids of one ``__transaction_state`` partition (before its log is replayed)."""
        for tid in [t for t in self.txns if self.partition_for(t) == partition]:
            del self.txns[tid]

    def busy(self, partition: int) -> bool:
        """Whether an id of ``partition`` has a transition waiting for its write, or markers
        being written (a Prepare state)."""
        return any(meta.has_pending or meta.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)
                   for tid, meta in self.txns.items() if self.partition_for(tid) == partition)

    def unfinished(self) -> list[TxnMetadata]:
        """Transactions whose markers were not all written (PrepareCommit/PrepareAbort): after a
        reload the driver writes their markers again, then completes them, as Kafka does."""
        return [m for m in self.txns.values() if m.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT)]

    # --- the write's outcome ------------------------------------------------------------------
    def written(self, transactional_id: str, transit: Transit) -> None:
        meta = self.txns.get(transactional_id)
        if meta is None:
            return
        if transit.state == S.DEAD:
            if meta.pending == S.DEAD:
                del self.txns[transactional_id]
            return
        meta.complete(transit)

    def failed(self, transactional_id: str, transit: Transit) -> None:
        """The write of ``transit`` failed: nothing changes (a failed epoch fence keeps its
        bumped epoch, so the next fence does not bump it again, as in Kafka)."""
        meta = self.txns.get(transactional_id)
        if meta is not None and meta.pending == transit.state:
            meta.cancel()

    # --- InitProducerId -----------------------------------------------------------------------
    def init_producer_id(self, now: int, transactional_id: str, timeout_ms: int,
                         expected: tuple[int, int] | None) -> Decision:
        """Kafka's handleInitProducerId for a transactional producer; ``expected`` is the
        (producer id, epoch) a v3+ request names (KIP-360), None when both are -1."""
        if transactional_id == "":
            return Decision(E.INVALID_REQUEST)
        if not 0 < timeout_ms <= self.config.transaction_max_timeout_ms:
            return Decision(E.INVALID_TRANSACTION_TIMEOUT)
        meta = self.txns.get(transactional_id)
        if meta is None:
            meta = self.txns[transactional_id] = TxnMetadata(
                transactional_id, self.new_producer_id(), timeout_ms, now)
        if meta.has_pending:
            return Decision(E.CONCURRENT_TRANSACTIONS)
        if expected is not None and not _expected_is_valid(meta, *expected):
            return Decision(E.PRODUCER_FENCED)
        if meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return Decision(E.CONCURRENT_TRANSACTIONS)
        if meta.state == S.ONGOING:
            # Abort the open transaction under a bumped epoch; the client retries meanwhile.
            return Decision(transit=meta.prepare_fence(), fence=True)
        if meta.state not in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
            raise IllegalTransition(f"{transactional_id}: InitProducerId in state {meta.state.display}")
        if epoch_exhausted(meta.producer_epoch) and (expected is None or expected[1] == meta.producer_epoch):
            transit = meta.prepare_rotation(self.new_producer_id(), timeout_ms, now, expected is not None)
        else:
            transit = meta.prepare_epoch_bump(timeout_ms, None if expected is None else expected[1], now)
            if transit is None:
                return Decision(E.PRODUCER_FENCED)
        return Decision(producer_id=transit.producer_id, producer_epoch=transit.producer_epoch,
                        transit=transit)

    # --- AddPartitionsToTxn / AddOffsetsToTxn -------------------------------------------------
    def add_partitions(self, now: int, transactional_id: str, producer_id: int, producer_epoch: int,
                       partitions: Iterable[tuple[str, int]], client_tv: int = 0) -> Decision:
        """Kafka's handleAddPartitionsToTransaction (AddOffsetsToTxn adds the group's
        ``__consumer_offsets`` partition through it; a transaction version 2 produce or
        TxnOffsetCommit adds theirs through AddPartitionsToTxn v4+, ``client_tv`` 2). A pending
        transition is checked first: over an exhausted epoch the producer may already name the
        next producer id, which only the pending completion holds."""
        if not transactional_id:
            return Decision(E.INVALID_REQUEST)
        meta = self.txns.get(transactional_id)
        partitions = set(partitions)
        if meta is None:
            return Decision(E.INVALID_PRODUCER_ID_MAPPING)
        if meta.has_pending:
            return Decision(E.CONCURRENT_TRANSACTIONS)
        error = _owner_error(meta, producer_id, producer_epoch)
        if error is not None:
            return Decision(error)
        if meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return Decision(E.CONCURRENT_TRANSACTIONS)
        if meta.state == S.ONGOING and partitions <= meta.partitions:
            return Decision()
        return Decision(transit=meta.prepare_add_partitions(partitions, now, client_tv))

    def verify_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], ErrorCode]:
        """Kafka's handleVerifyPartitionsInTransaction: is each partition in the producer's
        transaction? (The check a transactional produce passes first.)"""
        partitions = list(partitions)
        if not transactional_id:
            return dict.fromkeys(partitions, E.INVALID_REQUEST)
        meta = self.txns.get(transactional_id)
        error = _owner_error(meta, producer_id, producer_epoch)
        if error is None and meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            error = E.CONCURRENT_TRANSACTIONS
        if error is not None:
            return dict.fromkeys(partitions, error)
        return {p: E.NONE if p in meta.partitions else E.TRANSACTION_ABORTABLE for p in partitions}

    # --- EndTxn -------------------------------------------------------------------------------
    def end_transaction(self, now: int, transactional_id: str, producer_id: int, producer_epoch: int,
                        commit: bool, *, from_client: bool = True, client_tv: int = 0) -> Decision:
        """Kafka's endTransaction: EndTxn v0-4 and transaction version 1's aborts (``client_tv``
        0), else version 2's (:meth:`_end_v2`). A decision with a transit means: write
        PrepareCommit or PrepareAbort, answer, then write the markers (:meth:`markers_begin`)."""
        if not transactional_id:
            return Decision(E.INVALID_REQUEST)
        meta = self.txns.get(transactional_id)
        if meta is None:
            return Decision(E.INVALID_PRODUCER_ID_MAPPING)
        if client_tv >= 2:
            return self._end_v2(now, meta, producer_id, producer_epoch, commit, from_client)
        fencing = meta.pending == S.PREPARE_EPOCH_FENCE
        valid_epoch = (not from_client or producer_epoch == meta.producer_epoch) \
            and producer_epoch >= meta.producer_epoch
        if meta.producer_id != producer_id:
            return Decision(E.INVALID_PRODUCER_ID_MAPPING)
        if not valid_epoch:
            return Decision(E.PRODUCER_FENCED)
        if meta.has_pending and not fencing:
            return Decision(E.CONCURRENT_TRANSACTIONS)
        wanted = S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT
        if meta.state == S.ONGOING:
            if fencing:
                if commit:
                    raise IllegalTransition(f"{transactional_id}: a fence ends in an abort")
                meta.take_fence(producer_epoch)
            return Decision(transit=meta.prepare_end(S.PREPARE_COMMIT if commit else S.PREPARE_ABORT, now, 0))
        if meta.state == wanted:                          # a retry of the end that completed
            return Decision(producer_id=meta.producer_id, producer_epoch=meta.producer_epoch)
        same_way = S.PREPARE_COMMIT if commit else S.PREPARE_ABORT
        if meta.state == same_way:
            return Decision(E.CONCURRENT_TRANSACTIONS)
        if meta.state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT, S.PREPARE_COMMIT, S.PREPARE_ABORT, S.EMPTY):
            return _invalid_state(meta, commit)
        raise IllegalTransition(f"{meta.transactional_id}: EndTxn in state {meta.state.display}")

    def _end_v2(self, now: int, meta: TxnMetadata, producer_id: int, producer_epoch: int, commit: bool,
                from_client: bool) -> Decision:
        """Transaction version 2's end: every commit and abort bumps the epoch, so a retry is
        told apart by its epoch being the one before (or, past an exhausted epoch, by the
        previous producer id at the last epoch); an abort with no transaction open is written
        too (it bumps the epoch). A retry of an end that completed gets the current producer id
        and epoch back."""
        fencing = meta.pending == S.PREPARE_EPOCH_FENCE
        retry_on_overflow = not fencing and meta.previous_producer_id == producer_id \
            and producer_epoch == INT16_MAX - 1 and meta.producer_epoch == 0
        retry_on_bump = not fencing and meta.producer_epoch == producer_epoch + 1
        if fencing:
            valid_epoch = (not from_client or producer_epoch == meta.producer_epoch) \
                and producer_epoch >= meta.producer_epoch
        elif meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            valid_epoch = retry_on_bump
        elif meta.state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
            valid_epoch = retry_on_bump or retry_on_overflow or producer_epoch == meta.producer_epoch
        else:
            valid_epoch = producer_epoch == meta.producer_epoch
        retry = retry_on_bump or retry_on_overflow
        if meta.has_pending and not fencing:
            return Decision(E.CONCURRENT_TRANSACTIONS)
        if meta.producer_id != producer_id and not retry_on_overflow:
            return Decision(E.INVALID_PRODUCER_ID_MAPPING)
        if not valid_epoch:
            return Decision(E.PRODUCER_FENCED)
        state = meta.state
        done = Decision(producer_id=meta.producer_id, producer_epoch=meta.producer_epoch)
        if state == S.ONGOING:
            return self._v2_prepare(now, meta, S.PREPARE_COMMIT if commit else S.PREPARE_ABORT, fencing, False)
        if state == S.COMPLETE_COMMIT:
            if commit:
                return done if retry else _invalid_state(meta, commit)
            return _invalid_state(meta, commit) if retry else self._v2_prepare(now, meta, S.PREPARE_ABORT,
                                                                               fencing, True)
        if state == S.COMPLETE_ABORT:
            if not commit:
                return done if retry else self._v2_prepare(now, meta, S.PREPARE_ABORT, fencing, True)
            return _invalid_state(meta, commit)
        if state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return Decision(E.CONCURRENT_TRANSACTIONS) if (state == S.PREPARE_COMMIT) == commit \
                else _invalid_state(meta, commit)
        if state == S.EMPTY:
            return _invalid_state(meta, commit) if commit else self._v2_prepare(now, meta, S.PREPARE_ABORT,
                                                                                fencing, True)
        raise IllegalTransition(f"{meta.transactional_id}: EndTxn in state {state.display}")

    def _v2_prepare(self, now: int, meta: TxnMetadata, state: TxnState, fencing: bool,
                    no_partition_added: bool) -> Decision:
        """PrepareCommit/PrepareAbort at the next epoch; at an exhausted epoch the next producer id
        is chosen now, handed over by the completion. A fence's own bump is dropped: the abort
        bumps once."""
        next_producer_id = self.new_producer_id() if epoch_exhausted(meta.producer_epoch) else NO_PRODUCER_ID
        if fencing:
            meta.cancel()
        jump = None if next_producer_id != NO_PRODUCER_ID else self.epoch_jumps.pop(meta.transactional_id, None)
        return Decision(transit=meta.prepare_end(state, now, 2, next_producer_id, no_partition_added, jump))

    def markers_begin(self, now: int, transactional_id: str) -> Transit:
        """PrepareCommit/PrepareAbort was written: the transit that completes the transaction
        once every marker is written (pending meanwhile, so requests get
        CONCURRENT_TRANSACTIONS)."""
        return self.txns[transactional_id].prepare_complete(now)

    # --- timers -------------------------------------------------------------------------------
    def timed_out(self, now: int) -> list[tuple[str, int, int]]:
        """Kafka's abortTimedOutTransactions: fence every transaction open for longer than its
        timeout; (id, producer id, fenced epoch) of each, to abort with from_client=False."""
        out = []
        for tid, meta in self.txns.items():
            if meta.state != S.ONGOING or meta.start_ms + meta.timeout_ms >= now or meta.has_pending:
                continue
            transit = meta.prepare_fence()
            out.append((tid, meta.producer_id, transit.producer_epoch))
            log.info("transactional id %s: transaction of producer %d open past its %d ms timeout; "
                     "aborting it", safe(tid), meta.producer_id, meta.timeout_ms)
        return out

    def expired(self, now: int) -> list[tuple[str, Transit]]:
        """Kafka's removeExpiredTransactionalIds: ids idle for transactional.id.expiration.ms;
        (id, its Dead transit) each, to write as a tombstone."""
        limit = now - self.config.transactional_id_expiration_ms
        return [(tid, meta.prepare_dead()) for tid, meta in list(self.txns.items())
                if meta.state in EXPIRABLE and not meta.has_pending and meta.last_update_ms <= limit]

    # --- DescribeTransactions / ListTransactions ----------------------------------------------
    def describe(self, transactional_id: str) -> TxnMetadata | ErrorCode:
        if transactional_id == "":
            return E.INVALID_REQUEST
        meta = self.txns.get(transactional_id)
        if meta is None or meta.state == S.DEAD:
            return E.TRANSACTIONAL_ID_NOT_FOUND
        return meta

    def list(self, now: int, producer_ids: set[int], states: set[str], min_duration_ms: int = -1,
             id_pattern: str | None = None) -> tuple[list[Listed], list[str]] | ErrorCode:
        """Kafka's listTransactionStates: the ids every given filter matches (an empty set is
        no filter; a duration keeps transactions started longer ago than it; an id pattern,
        RE2/J as Kafka compiles it, must match the whole id), and the state filters that name
        no state. A pattern RE2/J rejects fails the whole list: INVALID_REGULAR_EXPRESSION."""
        pattern = None
        if id_pattern:
            try:
                pattern = compile_re2j(id_pattern)
            except InvalidRegex:
                return E.INVALID_REGULAR_EXPRESSION
        unknown = [name for name in states if TxnState.from_name(name) is None]
        out = []
        for tid in self._listing_order():
            meta = self.txns[tid]
            if meta.state == S.DEAD or (producer_ids and meta.producer_id not in producer_ids):
                continue
            if states and meta.state.display not in states:
                continue
            if min_duration_ms >= 0 and now - meta.start_ms <= min_duration_ms:
                continue
            if pattern is not None and not pattern.fullmatch(tid):
                continue
            out.append(Listed(tid, meta.producer_id, meta.state))
        return out, unknown

    def _listing_order(self) -> list[str]:
        """The ids in the order Kafka lists them: its cache is a Scala hash map of
        ``__transaction_state`` partitions (small ints: ascending), each a concurrent hash map
        of ids (in a HashMap's order, as far as a map that has not grown much goes)."""
        by_partition: dict[int, list[str]] = {}
        for tid in self.txns:
            by_partition.setdefault(self.partition_for(tid), []).append(tid)
        return [tid for partition in sorted(by_partition) for tid in hash_map_order(by_partition[partition])]


def _invalid_state(meta: TxnMetadata, commit: bool) -> Decision:
    log.debug("transactional id %s is %s; %s refused", safe(meta.transactional_id), meta.state.display,
              "commit" if commit else "abort")
    return Decision(E.INVALID_TXN_STATE)


def _owner_error(meta: TxnMetadata | None, producer_id: int, producer_epoch: int) -> ErrorCode | None:
    if meta is None or meta.producer_id != producer_id:
        return E.INVALID_PRODUCER_ID_MAPPING
    if meta.producer_epoch != producer_epoch:
        return E.PRODUCER_FENCED
    return None


def _expected_is_valid(meta: TxnMetadata, producer_id: int, epoch: int) -> bool:
    """KIP-360: an InitProducerId naming a producer id and epoch is fenced unless the id is
    fresh, the producer id is the current one, or it is the previous one at an exhausted epoch
    (a retry of a rotation whose answer was lost)."""
    return meta.producer_epoch == NO_PRODUCER_EPOCH or producer_id == meta.producer_id or \
        (producer_id == meta.previous_producer_id and epoch_exhausted(epoch))
