"""One transactional id's state (Kafka's TransactionMetadata) and the transitions between states.

A change is made in two steps, as Kafka makes it: ``prepare_*`` returns the :class:`Transit`
(the values the state will have) and marks the transition pending; the transit is written to
the transaction log; then :meth:`TxnMetadata.complete` applies it, or :meth:`TxnMetadata.cancel`
forgets it if the write failed. While a transition is pending, other requests for the id are
answered CONCURRENT_TRANSACTIONS.
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass, field

log = logging.getLogger("groupbroker.transactions")
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
INT16_MAX = 32767


class TxnState(enum.Enum):
    """Kafka's transaction states: (id written in the log, name Kafka's tools print)."""
    EMPTY = (0, "Empty")
    ONGOING = (1, "Ongoing")
    PREPARE_COMMIT = (2, "PrepareCommit")
    PREPARE_ABORT = (3, "PrepareAbort")
    COMPLETE_COMMIT = (4, "CompleteCommit")
    COMPLETE_ABORT = (5, "CompleteAbort")
    DEAD = (6, "Dead")
    PREPARE_EPOCH_FENCE = (7, "PrepareEpochFence")

    @property
    def id(self) -> int:
        return self.value[0]

    @property
    def display(self) -> str:
        return self.value[1]

    @classmethod
    def from_id(cls, state_id: int) -> TxnState:
        for s in cls:
            if s.id == state_id:
                return s
        raise ValueError(f"unknown transaction state id {state_id}")

    @classmethod
    def from_name(cls, name: str) -> TxnState | None:
        return next((s for s in cls if s.display == name), None)


S = TxnState
#: the states each state may be entered from (Kafka's validPreviousStates)
VALID_PREVIOUS = {
    S.EMPTY: {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.ONGOING: {S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.PREPARE_COMMIT: {S.ONGOING},
    # from Empty and the Complete states: transaction version 2's abort with nothing open
    S.PREPARE_ABORT: {S.ONGOING, S.PREPARE_EPOCH_FENCE, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.COMPLETE_COMMIT: {S.PREPARE_COMMIT},
    S.COMPLETE_ABORT: {S.PREPARE_ABORT},
    S.DEAD: {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.PREPARE_EPOCH_FENCE: {S.ONGOING},
}
#: states in which an id may expire (transactional.id.expiration.ms)
EXPIRABLE = frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT})


class IllegalTransition(Exception):
    """A transition Kafka's state machine forbids: a bug, never a client's doing."""


def epoch_exhausted(epoch: int) -> bool:
    return epoch >= INT16_MAX - 1


@dataclass(frozen=True, slots=True)
class Transit:
    """The values one transition writes (Kafka's TxnTransitMetadata): every field of the state,
    which :meth:`TxnMetadata.complete` takes over whole."""
    producer_id: int
    previous_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: frozenset[tuple[str, int]]
    start_ms: int
    last_update_ms: int
    #: the producer id the client is given once an exhausted epoch's transaction completes
    next_producer_id: int = NO_PRODUCER_ID
    #: the transaction version the client ended (or added partitions) with: 2 bumps the epoch
    client_tv: int = 0


@dataclass(slots=True)
class TxnMetadata:
    transactional_id: str
    producer_id: int
    timeout_ms: int
    last_update_ms: int
    state: TxnState = S.EMPTY
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    previous_producer_id: int = NO_PRODUCER_ID
    partitions: set[tuple[str, int]] = field(default_factory=set)
    start_ms: int = -1
    next_producer_id: int = NO_PRODUCER_ID
    client_tv: int = 0
    pending: TxnState | None = None
    #: an epoch fence whose write failed: the next fence reuses its (already bumped) epoch
    failed_epoch_fence: bool = False

    @property
    def has_pending(self) -> bool:
        return self.pending is not None

    # --- prepare ----------------------------------------------------------------------------
    def _transit(self, state: TxnState, **changed) -> Transit:
        """The current values with ``changed`` ones (Kafka's TransitionData), marked pending; the
        previous producer id is always the one before the transition."""
        if self.pending is not None:
            raise IllegalTransition(f"{self.transactional_id}: {state.display} while "
                                    f"{self.pending.display} is pending")
        values = dict(producer_id=self.producer_id, producer_epoch=self.producer_epoch,
                      last_producer_epoch=self.last_producer_epoch, timeout_ms=self.timeout_ms,
                      partitions=frozenset(self.partitions), start_ms=self.start_ms,
                      last_update_ms=self.last_update_ms, next_producer_id=self.next_producer_id,
                      client_tv=self.client_tv)
        values.update(changed)
        if state not in (S.DEAD,) and values["producer_epoch"] < 0:
            raise IllegalTransition(f"{self.transactional_id}: epoch {values['producer_epoch']} for {state.display}")
        if self.state not in VALID_PREVIOUS[state]:
            raise IllegalTransition(f"{self.transactional_id}: {self.state.display} -> {state.display}")
        self.pending = state
        values["partitions"] = frozenset(values["partitions"])
        return Transit(state=state, previous_producer_id=self.producer_id, **values)

    def prepare_fence(self) -> Transit:
        """Bump the epoch to fence the producer of an ongoing transaction (never written:
        the abort that follows carries the new epoch)."""
        epoch = self.producer_epoch if self.failed_epoch_fence or self.producer_epoch == INT16_MAX \
            else self.producer_epoch + 1
        return self._transit(S.PREPARE_EPOCH_FENCE, producer_epoch=epoch, last_producer_epoch=NO_PRODUCER_EPOCH)

    def prepare_epoch_bump(self, timeout_ms: int, expected_epoch: int | None, now: int) -> Transit | None:
        """InitProducerId on an idle id: the next epoch. None when ``expected_epoch`` (KIP-360)
        is neither the current nor the previous epoch: the caller is fenced."""
        if epoch_exhausted(self.producer_epoch):
            raise IllegalTransition(f"{self.transactional_id}: no epoch left for producer {self.producer_id}")
        if expected_epoch is None:
            epoch, last = self.producer_epoch + 1, NO_PRODUCER_EPOCH
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == self.producer_epoch:
            epoch, last = self.producer_epoch + 1, self.producer_epoch
        elif expected_epoch == self.last_producer_epoch:
            epoch, last = self.producer_epoch, self.last_producer_epoch     # a retry of the bump
        else:
            return None
        return self._transit(S.EMPTY, producer_epoch=epoch, last_producer_epoch=last, timeout_ms=timeout_ms,
                             partitions=(), start_ms=-1, last_update_ms=now)

    def prepare_rotation(self, producer_id: int, timeout_ms: int, now: int, keep_last_epoch: bool) -> Transit:
        """The epoch is exhausted: a new producer id at epoch 0."""
        last = self.producer_epoch if keep_last_epoch else NO_PRODUCER_EPOCH
        return self._transit(S.EMPTY, producer_id=producer_id, producer_epoch=0, last_producer_epoch=last,
                             timeout_ms=timeout_ms, partitions=(), start_ms=-1, last_update_ms=now)

    def prepare_add_partitions(self, added, now: int, client_tv: int) -> Transit:
        start = now if self.state in (S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT) else self.start_ms
        return self._transit(S.ONGOING, partitions=self.partitions | set(added), start_ms=start,
                             last_update_ms=now, client_tv=client_tv)

    def prepare_end(self, state: TxnState, now: int, client_tv: int, next_producer_id: int = NO_PRODUCER_ID,
                    no_partition_added: bool = False, bump_to: int | None = None) -> Transit:
        """PrepareCommit or PrepareAbort. Transaction version 2 bumps the epoch (to ``bump_to``
        when a fault says so), but not past the highest, which only a bug reaches; an abort with
        no transaction open starts one, as it were, now."""
        epoch, last = self.producer_epoch, self.last_producer_epoch
        if client_tv >= 2:
            if self.producer_epoch == INT16_MAX and state == S.PREPARE_ABORT:
                log.error("aborting transactional id %s's producer %d at epoch %d, the highest: a bug",
                          self.transactional_id, self.producer_id, self.producer_epoch)
            else:
                epoch = self.producer_epoch + 1 if bump_to is None else bump_to
            last = self.producer_epoch
        return self._transit(state, producer_epoch=epoch, last_producer_epoch=last,
                             start_ms=now if no_partition_added else self.start_ms, last_update_ms=now,
                             next_producer_id=next_producer_id, client_tv=client_tv)

    def prepare_complete(self, now: int) -> Transit:
        """CompleteCommit or CompleteAbort, once the markers are written; a transaction version 2
        end of an exhausted epoch hands over the next producer id, at epoch 0."""
        state = S.COMPLETE_COMMIT if self.state == S.PREPARE_COMMIT else S.COMPLETE_ABORT
        self.failed_epoch_fence = False
        rotated = self.client_tv >= 2 and self.next_producer_id != NO_PRODUCER_ID
        return self._transit(state, producer_id=self.next_producer_id if rotated else self.producer_id,
                             producer_epoch=0 if rotated else self.producer_epoch,
                             next_producer_id=NO_PRODUCER_ID, partitions=(), last_update_ms=now)

    def prepare_dead(self) -> Transit:
        return self._transit(S.DEAD, partitions=())

    # --- complete ---------------------------------------------------------------------------
    def complete(self, t: Transit) -> None:
        """The transit was written: make it the state (Kafka's completeTransitionTo)."""
        if self.pending != t.state:
            raise IllegalTransition(f"{self.transactional_id}: completing {t.state.display}, "
                                    f"pending {self.pending}")
        if t.state in (S.DEAD, S.PREPARE_EPOCH_FENCE):
            raise IllegalTransition(f"{self.transactional_id}: {t.state.display} is never completed")
        self.producer_id, self.previous_producer_id = t.producer_id, t.previous_producer_id
        self.next_producer_id = t.next_producer_id
        self.producer_epoch, self.last_producer_epoch = t.producer_epoch, t.last_producer_epoch
        self.timeout_ms, self.partitions = t.timeout_ms, set(t.partitions)
        self.start_ms, self.last_update_ms = t.start_ms, t.last_update_ms
        self.client_tv, self.state = t.client_tv, t.state
        self.pending = None

    def take_fence(self, epoch: int) -> None:
        """Transaction version 1: the abort that follows an epoch fence runs at the fenced epoch,
        set in place as Kafka sets it; should that abort's write fail, the next fence keeps this
        epoch."""
        self.pending = None
        self.producer_epoch, self.last_producer_epoch = epoch, NO_PRODUCER_EPOCH
        self.failed_epoch_fence = True

    def cancel(self) -> None:
        """The write of the pending transit failed: the state stays as it was."""
        self.pending = None

    def as_transit(self) -> Transit:
        """The current state as a transit (what a reload or a tool shows)."""
        return Transit(self.producer_id, self.previous_producer_id, self.producer_epoch,
                       self.last_producer_epoch, self.timeout_ms, self.state,
                       frozenset(self.partitions), self.start_ms, self.last_update_ms,
                       self.next_producer_id, self.client_tv)

    @classmethod
    def from_transit(cls, transactional_id: str, t: Transit) -> TxnMetadata:
        return cls(transactional_id, t.producer_id, t.timeout_ms, t.last_update_ms, t.state,
                   t.producer_epoch, NO_PRODUCER_EPOCH, t.previous_producer_id, set(t.partitions),
                   t.start_ms, t.next_producer_id, t.client_tv)
