"""The vocabulary of the group event journal: what happened, and why a rebalance started.

Both are plain strings on the wire (one JSON line per event, offsets_log/journal.py), so
anyone grepping a journal reads them without this module. The coordinator emits them as :class:`coordinator.actions.Journal` actions; nothing here changes
what a group does.
"""

from __future__ import annotations

import enum


class Event(enum.StrEnum):
    MEMBER_JOINED = "member_joined"            # added to the group (a new member or incarnation)
    MEMBER_LEFT = "member_left"                # LeaveGroup
    MEMBER_EXPIRED = "member_expired"          # removed by a timer (``reason`` says which)
    MEMBER_FENCED = "member_fenced"            # a static member replaced by a new incarnation
    MEMBER_REMOVED = "member_removed"          # dropped for group.max.size
    REBALANCE_STARTED = "rebalance_started"    # -> PreparingRebalance, with ``cause``
    REBALANCE_COMPLETED = "rebalance_completed"  # join phase done: a new generation exists
    SYNC_COMPLETED = "sync_completed"          # the leader's assignment handed out: Stable
    OFFSETS_COMMITTED = "offsets_committed"    # an accepted OffsetCommit
    GROUP_DELETED = "group_deleted"            # removed with its offsets (``reason`` says why)
    # KIP-848 consumer groups
    GROUP_EPOCH_BUMPED = "group_epoch_bumped"  # a subscription, member or topic change: ``epoch``
    TARGET_ASSIGNMENT = "target_assignment"    # the assignor ran for ``epoch``
    MEMBER_RECONCILED = "member_reconciled"    # a member's epoch or assignment state moved
    GROUP_CONVERTED = "group_converted"        # a live group changed protocol: ``to`` classic/consumer
    TOPIC_DELETED = "topic_deleted"            # a topic deleted (written by the broker)
    ERROR = "error"                            # a group-API error answered (written by the broker)
    LOG_END_OFFSET = "log_end_offset"          # a periodic sample of a partition's end (broker)
    JOURNAL_OPENED = "journal_opened"          # the broker started writing (a run boundary)
    # KIP-932 share groups (written by the broker's share-partitions)
    SHARE_DELIVERED = "share_delivered"        # ``records`` acquired by a member, ``redelivered`` of them
    SHARE_ACKNOWLEDGED = "share_acknowledged"  # a member's acknowledgements: accepted, released,
    #                                            rejected, archived (released at the delivery limit)
    SHARE_LOCKS_EXPIRED = "share_locks_expired"  # locks ran out: ``records`` back, ``archived`` of them


class Cause(enum.StrEnum):
    """Why a rebalance started (the ``cause`` of ``rebalance_started``)."""
    NEW_MEMBER = "new_member"                  # a member joined
    MEMBER_LEFT = "member_left"                # a member sent LeaveGroup
    SESSION_EXPIRY = "session_expiry"          # a member's session timed out
    SYNC_TIMEOUT = "sync_timeout"              # members did not send SyncGroup in time
    LEADER_REJOIN = "leader_rejoin"            # the leader rejoined a Stable group
    METADATA_CHANGE = "metadata_change"        # a member rejoined with other protocols/metadata
    #                                            (a consumer-group member changed its subscription)
    TOPICS_CHANGED = "topics_changed"          # a subscribed topic was created, deleted or grew
    REVOCATION_TIMEOUT = "revocation_timeout"  # a consumer-group member did not revoke in time
    REJOIN_TIMEOUT = "rejoin_timeout"          # a classic member of a consumer group did not
    #                                            rejoin within its rebalance timeout
    FORCED = "forced"                          # the coordinator's own decision (group.max.size
    #                                            after loading, a static replacement mid-sync,
    #                                            fault injection)


class Deletion(enum.StrEnum):
    """Why a group was removed (the ``reason`` of ``group_deleted``)."""
    DELETE_GROUPS = "delete_groups"            # a DeleteGroups request
    OFFSETS_EXPIRED = "offsets_expired"        # an Empty group whose last offsets expired


class Expiry(enum.StrEnum):
    """Which timer removed a member (the ``reason`` of ``member_expired``)."""
    SESSION = "session_timeout"                # no heartbeat within session.timeout.ms
    REJOIN = "rebalance_timeout"               # did not rejoin before the join phase ended
    SYNC = "sync_timeout"                      # did not send SyncGroup before the sync timer
    REVOCATION = "revocation_timeout"          # a consumer-protocol member did not revoke in time
