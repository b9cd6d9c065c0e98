"""CreateAcls, DescribeAcls and DeleteAcls as Kafka answers them (its AclApis and
AclControlManager): ALTER on the cluster to change ACLs, DESCRIBE to list them;
SECURITY_DISABLED without an authorizer; each creation checked on its own."""

from __future__ import annotations

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode as E
from protocol.messages import RESPONSES
from protocol.registry import API_TABLE

from security.acls import (CLUSTER_NAME, Acl, AclFilter, Authorizer, Operation, PatternType, Permission,
                           ResourceType, host_of)

CreateAcls = RESPONSES[ApiKey.CREATE_ACLS].cls
DescribeAcls = RESPONSES[ApiKey.DESCRIBE_ACLS].cls
DeleteAcls = RESPONSES[ApiKey.DELETE_ACLS].cls


def _cluster(authorizer: Authorizer, ctx, operation: Operation) -> bool:
    return authorizer.authorize(ctx.principal, host_of(ctx), operation, ResourceType.CLUSTER, CLUSTER_NAME,
                                API_TABLE[ctx.api_key].name)


def create(authorizer: Authorizer | None, ctx, request):
    result = CreateAcls.AclCreationResult
    if authorizer is None:
        return CreateAcls(results=tuple(result(error_code=E.SECURITY_DISABLED, error_message="No Authorizer is configured.")
                                        for _ in request.creations))
    if not _cluster(authorizer, ctx, Operation.ALTER):
        return CreateAcls(results=tuple(result(error_code=E.CLUSTER_AUTHORIZATION_FAILED) for _ in request.creations))
    acls, results = [], []
    for c in request.creations:
        problem = _invalid(c)
        if problem == "unusable":            # Kafka's binding cannot be built: the whole request fails
            return CreateAcls(results=tuple(result(error_code=E.UNKNOWN_SERVER_ERROR, error_message=None)
                                            for _ in request.creations))
        if problem is None:
            acls.append(Acl(c.resource_type, c.resource_name, c.resource_pattern_type, c.principal, c.host,
                            c.operation, c.permission_type))
        results.append(result(error_code=E.NONE if problem is None else E.INVALID_REQUEST,
                              error_message="" if problem is None else problem))   # Kafka's success says ""
    authorizer.add(acls)
    return CreateAcls(results=tuple(results))


def _invalid(c) -> str | None:
    """Why Kafka refuses one ACL creation, in its order: the binding cannot be built at all
    ("unusable": ANY or MATCH), then the broker's checks of the name, then the controller's of
    each code (one Kafka does not know reads as UNKNOWN) and of the principal."""
    if c.resource_type == ResourceType.ANY or c.resource_pattern_type in (PatternType.ANY, PatternType.MATCH) \
            or c.operation == Operation.ANY or c.permission_type == Permission.ANY:
        return "unusable"
    if c.resource_type == ResourceType.CLUSTER and c.resource_name != CLUSTER_NAME:
        return "The only valid name for the CLUSTER resource is kafka-cluster"
    if not c.resource_name:
        return "Invalid empty resource name"
    for what, code, known in (("resourceType", c.resource_type, ResourceType), ("patternType", c.resource_pattern_type, PatternType),
                              ("operation", c.operation, Operation), ("permissionType", c.permission_type, Permission)):
        if code not in known._value2member_map_:
            return f"Invalid {what} UNKNOWN"
    if ":" not in c.principal:
        return (f"Could not parse principal from `{c.principal}` (no colon is present separating the principal "
                f"type from the principal name)")
    return None


def _filter(f) -> AclFilter:
    return AclFilter(f.resource_type_filter, f.resource_name_filter, f.pattern_type_filter, f.principal_filter,
                     f.host_filter, f.operation, f.permission_type)


def describe(authorizer: Authorizer | None, ctx, request):
    if authorizer is None:
        return DescribeAcls(error_code=E.SECURITY_DISABLED, error_message="No Authorizer is configured on the broker",
                            resources=())
    if not _cluster(authorizer, ctx, Operation.DESCRIBE):
        return DescribeAcls(error_code=E.CLUSTER_AUTHORIZATION_FAILED, resources=())
    selected = _filter(request)
    grouped: dict[tuple, list[Acl]] = {}
    for acl in sorted(a for a in authorizer.acls if selected.matches(a)):
        grouped.setdefault((acl.resource_type, acl.name, acl.pattern), []).append(acl)
    resource = DescribeAcls.DescribeAclsResource
    return DescribeAcls(error_code=E.NONE, resources=tuple(
        resource(resource_type=t, resource_name=n, pattern_type=p, acls=tuple(
            resource.AclDescription(principal=a.principal, host=a.host, operation=a.operation,
                                    permission_type=a.permission) for a in acls))
        for (t, n, p), acls in grouped.items()))


def delete(authorizer: Authorizer | None, ctx, request):
    result = DeleteAcls.DeleteAclsFilterResult
    if authorizer is None:
        return DeleteAcls(filter_results=tuple(
            result(error_code=E.SECURITY_DISABLED, error_message="No Authorizer is configured.", matching_acls=())
            for _ in request.filters))
    if not _cluster(authorizer, ctx, Operation.ALTER):
        return DeleteAcls(filter_results=tuple(result(error_code=E.CLUSTER_AUTHORIZATION_FAILED, matching_acls=())
                                               for _ in request.filters))
    results, removed = [], set()
    for f in request.filters:
        matched = sorted(a for a in authorizer.acls if _filter(f).matches(a))
        removed.update(matched)
        results.append(result(error_code=E.NONE, error_message=None, matching_acls=tuple(result.DeleteAclsMatchingAcl(
            error_code=E.NONE, error_message=None, resource_type=a.resource_type, resource_name=a.name, pattern_type=a.pattern,
            principal=a.principal, host=a.host, operation=a.operation, permission_type=a.permission)
            for a in matched)))
    authorizer.remove(removed)
    return DeleteAcls(filter_results=tuple(results))
