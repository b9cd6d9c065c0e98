"""Group steps and raw headers the server tests share (the client is tests/support/trio_client.py)."""

from __future__ import annotations

import dataclasses
import struct

from protocol import REQUESTS
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode


async def join_stable_member(client, group: str, *, instance_id: str | None = None,
                             session_timeout_ms: int = 1000) -> tuple[str, int]:
    """Join ``group`` alone (JoinGroup v5 with the KIP-394 round trip, then SyncGroup v3);
    returns the member id and generation of the now Stable group."""
    jg, sg = REQUESTS[ApiKey.JOIN_GROUP].cls, REQUESTS[ApiKey.SYNC_GROUP].cls
    join = jg(group_id=group, session_timeout_ms=session_timeout_ms, rebalance_timeout_ms=2000,
              member_id="", group_instance_id=instance_id, protocol_type="consumer",
              protocols=(jg.JoinGroupRequestProtocol(name="range", metadata=b""),))
    first = await client.call(ApiKey.JOIN_GROUP, 5, join)
    if first.error_code == ErrorCode.MEMBER_ID_REQUIRED:      # static members skip the round trip
        first = await client.call(ApiKey.JOIN_GROUP, 5, dataclasses.replace(join, member_id=first.member_id))
    assert first.error_code == ErrorCode.NONE, first
    synced = await client.call(ApiKey.SYNC_GROUP, 3, sg(group_id=group, generation_id=first.generation_id,
                                         member_id=first.member_id, group_instance_id=instance_id))
    assert synced.error_code == ErrorCode.NONE, synced
    return first.member_id, first.generation_id


def header(api_key: int, version: int, correlation: int, client_id: bytes = b"t") -> bytes:
    return struct.pack(">hhih", api_key, version, correlation, len(client_id)) + client_id
