"""Which handler answers which group API (by API key)."""

from . import admin, membership, offsets

HANDLERS = {
    11: membership.join_group,
    14: membership.sync_group,
    12: membership.heartbeat,
    13: membership.leave_group,
    8: offsets.offset_commit,
    9: offsets.offset_fetch,
    47: offsets.offset_delete,
    15: admin.describe_groups,
    16: admin.list_groups,
    42: admin.delete_groups,
}
