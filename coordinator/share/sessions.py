"""Share sessions (Kafka's ShareSessionCache): one per group member on each broker (node), the
partitions its ShareFetch requests read there, and the epoch its next ShareFetch or
ShareAcknowledge must carry. A member reading partitions led by several nodes has a session on
each, as with Kafka.

Epoch 0 opens (or replaces) a member's session, which then expects epoch 1, 2, ... (after the
largest int comes 1); epoch -1 closes it. A later ShareFetch reads every partition of the
session, not only those it names, and its answer leaves out the partitions with nothing new.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Hashable

from protocol.errors import ErrorCode

INITIAL_EPOCH, FINAL_EPOCH = 0, -1
_MAX_INT = 2**31 - 1

#: (topic id, partition)
Key = tuple[uuid.UUID, int]


def next_epoch(epoch: int) -> int:
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == _MAX_INT else epoch + 1


class SessionError(Exception):
    """A request the session cache refuses, answered with ``code`` as a whole."""

    def __init__(self, code: ErrorCode):
        super().__init__(code.name)
        self.code = code


#: (node id, group id, member id)
SessionKey = tuple[int, str, str]


@dataclass
class ShareSession:
    node: int
    group_id: str
    member_id: str
    epoch: int
    connection: Hashable
    #: the session's partitions, in order: key -> [topic name (None: unknown id), send in the
    #: next answer even with nothing new]
    partitions: dict[Key, list] = field(default_factory=dict)


@dataclass(frozen=True)
class Context:
    """What one ShareFetch reads: ``kind`` is "initial", "subsequent" or "final"."""
    kind: str
    epoch: int
    partitions: list[tuple[Key, str | None]]
    session: ShareSession | None = None


class ShareSessions:
    def __init__(self, max_sessions: int = 2000):
        self.max_sessions = max_sessions
        self.sessions: dict[SessionKey, ShareSession] = {}
        self.by_connection: dict[Hashable, SessionKey] = {}

    def fetch_context(self, node: int, group_id: str, member_id: str, epoch: int,
                      wanted: list[tuple[Key, str | None]], forgotten: list[Key], acknowledging: bool,
                      connection: Hashable) -> Context:
        """Kafka's SharePartitionManager.newContext, on node ``node``."""
        key = (node, group_id, member_id)
        session = self.sessions.get(key)
        if epoch == FINAL_EPOCH:
            if session is None:
                raise SessionError(ErrorCode.SHARE_SESSION_NOT_FOUND)
            return Context("final", epoch, [])
        if epoch == INITIAL_EPOCH:
            if acknowledging:
                raise SessionError(ErrorCode.INVALID_REQUEST)
            self.sessions.pop(key, None)
            if len(self.sessions) >= self.max_sessions:
                raise SessionError(ErrorCode.SHARE_SESSION_LIMIT_REACHED)
            session = self.sessions[key] = ShareSession(node, group_id, member_id, next_epoch(epoch), connection)
            for k, name in wanted:
                session.partitions.setdefault(k, [name, False])
            self.by_connection[connection] = key
            return Context("initial", epoch, list(wanted), session)
        if session is None:
            raise SessionError(ErrorCode.SHARE_SESSION_NOT_FOUND)
        if session.epoch != epoch:
            raise SessionError(ErrorCode.INVALID_SHARE_SESSION_EPOCH)
        for k, name in wanted:
            session.partitions.setdefault(k, [name, True])
        for k in forgotten:
            session.partitions.pop(k, None)
        session.epoch = next_epoch(session.epoch)
        parts = [(k, entry[0]) for k, entry in session.partitions.items()]
        if len(parts) > 1 and epoch >= 1:                # round robin: rotated left by epoch % n
            turn = epoch % len(parts)
            parts = parts[turn:] + parts[:turn]
        return Context("subsequent", epoch, parts, session)

    def acknowledge(self, node: int, group_id: str, member_id: str, epoch: int) -> None:
        """Kafka's acknowledgeSessionUpdate: a ShareAcknowledge moves the session's epoch too."""
        if epoch == INITIAL_EPOCH:
            raise SessionError(ErrorCode.INVALID_SHARE_SESSION_EPOCH)
        session = self.sessions.get((node, group_id, member_id))
        if session is None:
            raise SessionError(ErrorCode.SHARE_SESSION_NOT_FOUND)
        if epoch == FINAL_EPOCH:
            return
        if session.epoch != epoch:
            raise SessionError(ErrorCode.INVALID_SHARE_SESSION_EPOCH)
        session.epoch = next_epoch(session.epoch)

    def answered(self, context: Context, results: list) -> list | None:
        """The partitions a subsequent fetch's answer carries ((key, has records, error code,
        entry) each; the rest left out), or None when another request moved the session's
        epoch meanwhile (INVALID_SHARE_SESSION_EPOCH)."""
        if context.kind != "subsequent":
            return [entry for *_, entry in results]
        session = context.session
        if self.sessions.get((session.node, session.group_id, session.member_id)) is not session \
                or session.epoch != next_epoch(context.epoch):
            return None
        out = []
        for key, has_records, error, entry in results:
            cached = session.partitions.get(key)
            if cached is None:
                continue
            if has_records:
                session.partitions[key] = session.partitions.pop(key)       # to the end
            if has_records or cached[1] or error:
                cached[1] = bool(error)
                out.append(entry)
        return out

    def release(self, node: int, group_id: str, member_id: str) -> list[Key] | None:
        """The session ends: its partitions (whose records the member held go back), or None."""
        session = self.sessions.pop((node, group_id, member_id), None)
        if session is None:
            return None
        if self.by_connection.get(session.connection) == (node, group_id, member_id):
            del self.by_connection[session.connection]
        return list(session.partitions)

    def disconnected(self, connection: Hashable) -> tuple[str, str, list[Key]] | None:
        """A connection closed: the session it opened ends, unless another replaced it."""
        key = self.by_connection.pop(connection, None)
        if key is None or self.sessions.get(key) is None or self.sessions[key].connection is not connection:
            return None
        return (*key[1:], self.release(*key))
