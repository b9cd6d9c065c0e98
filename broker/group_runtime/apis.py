"""The group coordinator's APIs, one declaration each: :class:`broker.group_runtime.router.GroupRouter`
answers them, reaching the shard of each group named."""

from __future__ import annotations

from coordinator.responses import error_response
from protocol import error_answers
from protocol.api_keys import ApiKey

from security.authorization import Authorization

from broker.api_spec import ApiSpec, Runs, always, never
from broker.group_runtime.router import SINGLE_GROUP_OFFSET_FETCH


def _group_failed(key: ApiKey):
    """The coordinator's own answer to a request of ``key`` that fails as a whole."""
    def failed(version, request, error, message=None):
        return error_response(key, version, request, error)
    return failed


def _group(key: ApiKey, handler: str, authorize, pipelined=never, failed=None, feature=None) -> ApiSpec:
    return ApiSpec(key, Runs.GROUP_COORDINATOR, handler, failed or _group_failed(key), authorize,
                   pipelined=pipelined, injectable=True, feature=feature)


def _single_group_offset_fetch(version: int) -> bool:
    return version <= SINGLE_GROUP_OFFSET_FETCH


GROUP_APIS = (
    ApiSpec(ApiKey.FIND_COORDINATOR, Runs.GROUP_COORDINATOR, "find_coordinator",
            error_answers.find_coordinator, Authorization.find_coordinator, injectable=True),
    # the classic protocol: JoinGroup and SyncGroup wait for the other members
    _group(ApiKey.JOIN_GROUP, "single_group", Authorization.group_read),
    _group(ApiKey.SYNC_GROUP, "single_group", Authorization.group_read),
    _group(ApiKey.LEAVE_GROUP, "single_group", Authorization.group_read),
    _group(ApiKey.HEARTBEAT, "pipelined", Authorization.group_read, always),
    # the consumer protocol (KIP-848)
    _group(ApiKey.CONSUMER_GROUP_HEARTBEAT, "pipelined", Authorization.consumer_group_heartbeat, always),
    _group(ApiKey.CONSUMER_GROUP_DESCRIBE, "consumer_group_describe", Authorization.consumer_group_describe),
    # the share protocol (KIP-932)
    _group(ApiKey.SHARE_GROUP_HEARTBEAT, "pipelined", Authorization.share_group_heartbeat, always,
           error_answers.SHARE_GROUP_HEARTBEAT_FAILED, "share.version"),
    _group(ApiKey.SHARE_GROUP_DESCRIBE, "share_group_describe", Authorization.share_group_describe,
           failed=error_answers.SHARE_GROUP_DESCRIBE_FAILED, feature="share.version"),
    # the streams protocol (KIP-1071)
    _group(ApiKey.STREAMS_GROUP_HEARTBEAT, "streams_group_heartbeat", Authorization.streams_group_heartbeat,
           failed=error_answers.STREAMS_GROUP_HEARTBEAT_FAILED, feature="streams.version"),
    _group(ApiKey.STREAMS_GROUP_DESCRIBE, "streams_group_describe", Authorization.streams_group_describe,
           failed=error_answers.STREAMS_GROUP_DESCRIBE_FAILED, feature="streams.version"),
    # offsets
    _group(ApiKey.OFFSET_COMMIT, "pipelined", Authorization.offset_commit, always),
    _group(ApiKey.OFFSET_FETCH, "offset_fetch", Authorization.offset_fetch, _single_group_offset_fetch),
    _group(ApiKey.OFFSET_DELETE, "pipelined", Authorization.offset_delete, always),
    # a transaction's offsets, once the transaction coordinator has verified the transaction
    _group(ApiKey.TXN_OFFSET_COMMIT, "txn_offset_commit", Authorization.txn_offset_commit),
    # administration
    _group(ApiKey.DESCRIBE_GROUPS, "describe_groups", Authorization.describe_groups),
    _group(ApiKey.LIST_GROUPS, "list_groups", Authorization.list_groups),
    _group(ApiKey.DELETE_GROUPS, "delete_groups", Authorization.delete_groups),
)
