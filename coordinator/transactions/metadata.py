"""One transactional id's state (Kafka's TransactionMetadata) and the transitions between states.

A change is made in two steps, as Kafka makes it: ``prepare_*`` returns the :class:`Transit`
(the values the state will have) and marks the transition pending; the transit is written to
the transaction log; then :meth:`TxnMetadata.complete` applies it, or :meth:`TxnMetadata.cancel`
forgets it if the write failed. While a transition is pending, other requests for the id are
answered CONCURRENT_TRANSACTIONS.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

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
    S.PREPARE_ABORT: {S.ONGOING, S.PREPARE_EPOCH_FENCE},
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
    """The values one transition writes (Kafka's TxnTransitMetadata)."""
    producer_id: int
    previous_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: frozenset[tuple[str, int]]
    start_ms: int
    last_update_ms: int


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
    pending: TxnState | None = None
    #: an epoch fence whose write failed: the next fence reuses its (already bumped) epoch
    failed_epoch_fence: bool = False

    @property
    def has_pending(self) -> bool:
        return self.pending is not None

    # --- prepare ----------------------------------------------------------------------------
    def _transit(self, state: TxnState, producer_id: int, epoch: int, last_epoch: int, timeout_ms: int,
                 partitions, start_ms: int, now: int) -> Transit:
        if self.pending is not None:
            raise IllegalTransition(f"{self.transactional_id}: {state.display} while "
                                    f"{self.pending.display} is pending")
        if state not in (S.DEAD,) and epoch < 0:
            raise IllegalTransition(f"{self.transactional_id}: epoch {epoch} for {state.display}")
        if self.state not in VALID_PREVIOUS[state]:
            raise IllegalTransition(f"{self.transactional_id}: {self.state.display} -> {state.display}")
        self.pending = state
        return Transit(producer_id, self.producer_id, epoch, last_epoch, timeout_ms, state,
                       frozenset(partitions), start_ms, now)

    def prepare_fence(self) -> Transit:
        """Bump the epoch to fence the producer of an ongoing transaction (never written:
        the abort that follows carries the new epoch)."""
        epoch = self.producer_epoch if self.failed_epoch_fence else self.producer_epoch + 1
        return self._transit(S.PREPARE_EPOCH_FENCE, self.producer_id, epoch, NO_PRODUCER_EPOCH,
                             self.timeout_ms, self.partitions, self.start_ms, self.last_update_ms)

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
        return self._transit(S.EMPTY, self.producer_id, epoch, last, timeout_ms, (), -1, now)

    def prepare_rotation(self, producer_id: int, timeout_ms: int, now: int, keep_last_epoch: bool) -> Transit:
        """The epoch is exhausted: a new producer id at epoch 0."""
        last = self.producer_epoch if keep_last_epoch else NO_PRODUCER_EPOCH
        return self._transit(S.EMPTY, producer_id, 0, last, timeout_ms, (), -1, now)

    def prepare_add_partitions(self, added, now: int) -> Transit:
        start = now if self.state in (S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT) else self.start_ms
        return self._transit(S.ONGOING, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                             self.timeout_ms, self.partitions | set(added), start, now)

    def prepare_end(self, state: TxnState, now: int) -> Transit:
        return self._transit(state, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                             self.timeout_ms, self.partitions, self.start_ms, now)

    def prepare_complete(self, now: int) -> Transit:
        state = S.COMPLETE_COMMIT if self.state == S.PREPARE_COMMIT else S.COMPLETE_ABORT
        self.failed_epoch_fence = False
        return self._transit(state, self.producer_id, self.producer_epoch, self.producer_epoch,
                             self.timeout_ms, (), self.start_ms, now)

    def prepare_dead(self) -> Transit:
        return self._transit(S.DEAD, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                             self.timeout_ms, (), self.start_ms, self.last_update_ms)

    # --- complete ---------------------------------------------------------------------------
    def complete(self, t: Transit) -> None:
        """The transit was written: make it the state (Kafka's completeTransitionTo)."""
        if self.pending != t.state:
            raise IllegalTransition(f"{self.transactional_id}: completing {t.state.display}, "
                                    f"pending {self.pending}")
        if t.state == S.EMPTY:
            self.producer_id, self.previous_producer_id = t.producer_id, t.previous_producer_id
            self.producer_epoch, self.last_producer_epoch = t.producer_epoch, t.last_producer_epoch
            self.timeout_ms = t.timeout_ms
            self.start_ms = t.start_ms          # -1: no transaction (an aborted one's start goes)
        elif t.state == S.ONGOING:
            self.start_ms = t.start_ms
            self.partitions |= t.partitions
        elif t.state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
            self.start_ms = t.start_ms
            self.partitions.clear()
        elif t.state in (S.DEAD, S.PREPARE_EPOCH_FENCE):
            raise IllegalTransition(f"{self.transactional_id}: {t.state.display} is never completed")
        self.state = t.state
        self.last_update_ms = t.last_update_ms
        self.pending = None

    def take_fence(self, epoch: int) -> None:
        """The abort that follows an epoch fence runs at the fenced epoch, set in place as Kafka
        sets it; should that abort's write fail, the next fence keeps this epoch."""
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
                       frozenset(self.partitions), self.start_ms, self.last_update_ms)

    @classmethod
    def from_transit(cls, transactional_id: str, t: Transit) -> TxnMetadata:
        return cls(transactional_id, t.producer_id, t.timeout_ms, t.last_update_ms, t.state,
                   t.producer_epoch, NO_PRODUCER_EPOCH, t.previous_producer_id, set(t.partitions),
                   t.start_ms)

