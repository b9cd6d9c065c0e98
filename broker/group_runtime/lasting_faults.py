"""The coordinator faults that outlast their operation, applied where requests enter a shard.

A fault of coordinator/interventions.py changes the groups once, as its real cause would
(a member removed, a group checked). What a test then expects to last is kept here, by the
shard's runner, as a rewrite of that shard's requests and answers; the protocol logic itself
never asks whether a fault is armed. Soft state, as in Kafka nothing like it exists: it is
gone when the shard reloads.
"""

from __future__ import annotations

import dataclasses

from coordinator.actions import Reply
from coordinator.interventions import as_unrevoked, fenced_member_error
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode


#: the heartbeats of the group types whose members can be fenced and held, and the type's name
_HEARTBEATS = {ApiKey.CONSUMER_GROUP_HEARTBEAT: "consumer", ApiKey.STREAMS_GROUP_HEARTBEAT: "streams"}


class LastingFaults:
    def __init__(self) -> None:
        #: (group, member) fenced by fault injection -> the member epoch it had
        self.fenced: dict[tuple[str, str], int] = {}
        #: groups whose revocations are held
        self.held: set[str] = set()

    def clear(self) -> None:
        self.fenced.clear()
        self.held.clear()

    def before(self, shard, api_key: int, request):
        """The request as the shard is to see it: a held group's heartbeats as if unrevoked."""
        if api_key in _HEARTBEATS and request.group_id in self.held:
            return as_unrevoked(shard, request)
        return request

    def after(self, token, api_key: int, request, actions: list) -> None:
        """A fenced member's next heartbeat is answered FENCED_MEMBER_EPOCH rather than
        UNKNOWN_MEMBER_ID (what a member removed otherwise gets); a rejoin drops the rule."""
        if api_key not in _HEARTBEATS or request.instance_id is not None:
            return
        key = (request.group_id, request.member_id)
        if key not in self.fenced:
            return
        if request.member_epoch == 0:
            del self.fenced[key]
            return
        for i, action in enumerate(actions):
            if isinstance(action, Reply) and action.token is token and \
                    action.response.error_code == ErrorCode.UNKNOWN_MEMBER_ID:
                message = fenced_member_error(self.fenced.pop(key), request.member_epoch, _HEARTBEATS[api_key])
                actions[i] = dataclasses.replace(action, response=dataclasses.replace(
                    action.response, error_code=ErrorCode.FENCED_MEMBER_EPOCH, error_message=message))
                return
