"""What one coordinator operation decided: its records, its replies, its journal events.

Kafka's ``CoordinatorResult`` carries the records an operation writes and the response it
gives. Here one operation may also answer other parked requests (a completed join answers every
member), so the result is the ordered list of :mod:`coordinator.actions`: the driver carries
them out in order, and a reply that follows records is released only once they are durable.
Each operation gets a fresh result from its shard and hands it back; nothing is kept between
operations.
"""

from __future__ import annotations

from offsets_log.errors import RecordTooLargeError
from offsets_log.records import BATCH_OVERHEAD, Record, batch_size

from coordinator.actions import Action, CreateTopics, Journal, Persist, Reply, ShareStateInit


class CoordinatorResult:
    __slots__ = ("shard_id", "journal", "message_max_bytes", "actions")

    def __init__(self, shard_id: int, journal: bool, message_max_bytes: int):
        self.shard_id = shard_id
        self.journal = journal            # collect journal events (coordinator/events.py)
        self.message_max_bytes = message_max_bytes
        self.actions: list[Action] = []

    def reply(self, token, api_key: int, version: int, response) -> None:
        self.actions.append(Reply(token, api_key, version, response))

    def persist(self, records: list[Record]) -> None:
        """Queue records for the log; raises :class:`RecordTooLargeError`, queueing nothing,
        if one is over the offsets topic's max.message.bytes (Kafka's CoordinatorRuntime
        refuses such a batch with RecordTooLargeException)."""
        if records:
            limit = self.message_max_bytes - BATCH_OVERHEAD - 16   # below it: surely fits
            for record in records:
                if len(record.key) + len(record.value or b"") > limit and \
                        batch_size(record) > self.message_max_bytes:
                    raise RecordTooLargeError(
                        f"a record batch of {batch_size(record)} bytes is over "
                        f"message.max.bytes ({self.message_max_bytes})")
            self.actions.append(Persist(tuple(records)))

    def note(self, now: int, event: str, group, member: str | None = None, **details) -> None:
        """Record a group event for the journal (only when the journal is on)."""
        if self.journal:
            self.actions.append(Journal(event, now, self.shard_id, group.group_id, group.generation,
                                        member, details))

    def init_share_state(self, group: str, partitions: dict) -> None:
        self.actions.append(ShareStateInit(group, partitions))

    def create_topics(self, token, topics: dict, error_ttl_ms: int) -> None:
        self.actions.append(CreateTopics(token, topics, error_ttl_ms))

    # --- within one operation -------------------------------------------------------------
    def mark(self) -> int:
        """Where the next action will go (to insert records ahead of replies already queued)."""
        return len(self.actions)

    def persist_at(self, index: int, records: list[Record]) -> None:
        self.actions.insert(index, Persist(tuple(records)))

    def wrote_since(self, index: int) -> bool:
        return any(isinstance(a, Persist) for a in self.actions[index:])

    def drop_notes_since(self, index: int) -> None:
        """Forget the journal events queued since ``index`` (what they report was undone)."""
        self.actions[index:] = [a for a in self.actions[index:] if not isinstance(a, Journal)]


class StepFailed(Exception):
    """An operation threw midway; ``partial`` is what it had decided, none of which may be
    carried out (the driver answers those requests and reloads the shard). The cause is the
    exception's ``__cause__``."""

    def __init__(self, partial: CoordinatorResult):
        super().__init__("a coordinator operation failed")
        self.partial = partial
