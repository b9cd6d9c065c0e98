"""Requests Kafka cannot even build: its request classes check a few things as they are parsed,
and a request that fails them is malformed, like a truncated one (the connection is closed).
``parse_failure`` says why a decoded request is one of those, or None."""

from __future__ import annotations

from .api_keys import ApiKey

_UNKNOWN = 0        # the UNKNOWN code of ACL resource types, pattern types, operations, permissions
_LITERAL = 3


def parse_failure(api_key: int, version: int, body) -> str | None:
    if api_key == ApiKey.CREATE_ACLS:
        return _acl_creations(version, body.creations)
    if api_key == ApiKey.DESCRIBE_ACLS and _unknown_filter(body):
        return "DescribeAclsRequest contains UNKNOWN elements"
    if api_key == ApiKey.DELETE_ACLS and any(_unknown_filter(f) for f in body.filters):
        return "Filters contain UNKNOWN elements"
    return None


def _unknown_filter(f) -> bool:
    return _UNKNOWN in (f.pattern_type_filter, f.resource_type_filter, f.operation, f.permission_type)


def _acl_creations(version: int, creations) -> str | None:
    if version == 0 and any(c.resource_pattern_type != _LITERAL for c in creations):
        return "CreateAcls v0 only supports literal resource pattern types"
    if any(_UNKNOWN in (c.resource_pattern_type, c.resource_type, c.permission_type, c.operation)
           for c in creations):
        return "CreatableAcls contain unknown elements"
    return None
