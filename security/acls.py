"""ACLs and the authorizer, as Kafka's StandardAuthorizer decides: super users first; then the
ACLs on the resource (literal name, prefixed names it starts with, the literal ``*``) for the
principal (or ``User:*``) and host (or ``*``): any DENY wins, then any ALLOW (READ, WRITE,
DELETE and ALTER imply DESCRIBE, ALTER_CONFIGS implies DESCRIBE_CONFIGS; ALL implies all);
with neither, access is denied if any ACL names the resource at all, and otherwise is
``allow.everyone.if.no.acl.found``.

The ACLs live in ``<data-dir>/security/acls.json``, rewritten whole and crash-safely on every
change (CreateAcls, DeleteAcls, fault injection), read once at start. Pure logic and files.
"""

from __future__ import annotations

import enum
import json
import logging
import os
from dataclasses import asdict, dataclass

from security.files import FOLDER, locked, write_atomically
from security.settings import SettingsError

audit = logging.getLogger("groupbroker.authorizer")
FILE = "acls.json"
CLUSTER_NAME = "kafka-cluster"
WILDCARD = "*"
ALL_PRINCIPALS = "User:*"


class ResourceType(enum.IntEnum):
    UNKNOWN, ANY, TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, DELEGATION_TOKEN, USER = range(8)

    @property
    def title(self) -> str:
        """Kafka's name in logs and messages: Topic, Group, Cluster, TransactionalId."""
        return "".join(part.capitalize() for part in self.name.split("_"))


class PatternType(enum.IntEnum):
    UNKNOWN, ANY, MATCH, LITERAL, PREFIXED = range(5)


class Operation(enum.IntEnum):
    (UNKNOWN, ANY, ALL, READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS,
     ALTER_CONFIGS, IDEMPOTENT_WRITE, CREATE_TOKENS, DESCRIBE_TOKENS) = range(15)


class Permission(enum.IntEnum):
    UNKNOWN, ANY, DENY, ALLOW = range(4)


#: what an ALLOW of each key grants besides itself
_IMPLIED = {Operation.DESCRIBE: {Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER},
            Operation.DESCRIBE_CONFIGS: {Operation.ALTER_CONFIGS}}
#: the operations a resource type has (Kafka's AclEntry.supportedOperations): its authorized-operations bits
SUPPORTED = {
    ResourceType.TOPIC: (Operation.READ, Operation.WRITE, Operation.CREATE, Operation.DESCRIBE, Operation.DELETE,
                         Operation.ALTER, Operation.DESCRIBE_CONFIGS, Operation.ALTER_CONFIGS),
    ResourceType.GROUP: (Operation.READ, Operation.DESCRIBE, Operation.DELETE, Operation.DESCRIBE_CONFIGS,
                         Operation.ALTER_CONFIGS),
    ResourceType.CLUSTER: (Operation.CREATE, Operation.CLUSTER_ACTION, Operation.DESCRIBE_CONFIGS,
                           Operation.ALTER_CONFIGS, Operation.IDEMPOTENT_WRITE, Operation.ALTER, Operation.DESCRIBE),
    ResourceType.TRANSACTIONAL_ID: (Operation.DESCRIBE, Operation.WRITE),
}


@dataclass(frozen=True, order=True)
class Acl:
    resource_type: int
    name: str
    pattern: int            # LITERAL or PREFIXED
    principal: str
    host: str
    operation: int
    permission: int         # DENY or ALLOW

    def applies_to(self, resource_type: int, name: str) -> bool:
        if self.resource_type != resource_type:
            return False
        if self.pattern == PatternType.PREFIXED:
            return name.startswith(self.name)
        return self.name == name or self.name == WILDCARD

    def grants(self, principal: str, host: str, operation: int) -> bool:
        """Whether this ACL speaks about this principal, host and operation (its permission says how)."""
        if self.principal not in (principal, ALL_PRINCIPALS) or self.host not in (host, WILDCARD):
            return False
        if self.operation in (operation, Operation.ALL):
            return True
        return self.permission == Permission.ALLOW and self.operation in _IMPLIED.get(operation, ())

    def describe(self) -> str:
        return (f"StandardAcl(resourceType={ResourceType(self.resource_type).name}, resourceName={self.name}, "
                f"patternType={PatternType(self.pattern).name}, principal={self.principal}, host={self.host}, "
                f"operation={Operation(self.operation).name}, permissionType={Permission(self.permission).name})")


@dataclass(frozen=True)
class AclFilter:
    """What DescribeAcls and DeleteAcls select (Kafka's AclBindingFilter): None and ANY match all."""
    resource_type: int
    name: str | None
    pattern: int
    principal: str | None
    host: str | None
    operation: int
    permission: int

    def matches(self, acl: Acl) -> bool:
        if self.resource_type != ResourceType.ANY and acl.resource_type != self.resource_type:
            return False
        if self.pattern == PatternType.MATCH:        # the ACLs that would apply to the literal name
            named = self.name is None or acl.applies_to(acl.resource_type, self.name)
        else:
            named = ((self.pattern == PatternType.ANY or acl.pattern == self.pattern)
                     and (self.name is None or acl.name == self.name))
        return (named and (self.principal is None or acl.principal == self.principal)
                and (self.host is None or acl.host == self.host)
                and self.operation in (Operation.ANY, acl.operation)
                and self.permission in (Permission.ANY, acl.permission))


def host_of(ctx) -> str:
    """A request's client address as ACL hosts name it (no leading slash)."""
    return ctx.client_host.lstrip("/")


#: what authorizer.class.name must name for ACLs to be enforced (Kafka's KRaft authorizer)
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


def authorizer_named(props: dict) -> bool:
    """Whether the settings turn ACLs on; SettingsError for an authorizer we do not have."""
    name = (props.get("authorizer.class.name") or "").strip()
    if name and name != STANDARD_AUTHORIZER:
        raise SettingsError(f"authorizer.class.name={name}: groupbroker enforces ACLs as Kafka's "
                            f"{STANDARD_AUTHORIZER} does, and knows no other authorizer")
    for user in _super_users(props.get("super.users")):
        if ":" not in user:
            raise SettingsError(f"super.users: expected a string in format principalType:principalName "
                                f"but got {user}")
    return bool(name)


def _super_users(value: str | None) -> frozenset[str]:
    return frozenset(u.strip() for u in (value or "").split(";") if u.strip())


def authorizer_of(config) -> Authorizer | None:
    """The broker's authorizer, as its settings ask: none without authorizer.class.name."""
    if not authorizer_named(config.props):
        return None
    return Authorizer(config.data_dir, config.props.get("super.users"),
                      config.props.get("allow.everyone.if.no.acl.found", "false").strip().lower() == "true")


class Authorizer:
    """The ACLs of one data dir and the decisions they make."""

    def __init__(self, data_dir: str | None, super_users: str | None, allow_if_no_acl: bool):
        self.path = os.path.join(data_dir, FOLDER, FILE) if data_dir else None
        self.super_users = _super_users(super_users)
        self.allow_if_no_acl = allow_if_no_acl
        self.acls: set[Acl] = set()
        if self.path and os.path.exists(self.path):
            with open(self.path, encoding="utf-8") as f:
                self.acls = {Acl(**fields) for fields in json.load(f)["acls"]}
        audit.info("set super.users=%s, default result=%s; %d acl(s) loaded", ",".join(sorted(self.super_users)),
                   "ALLOWED" if allow_if_no_acl else "DENIED", len(self.acls))

    def authorize(self, principal: str, host: str, operation: int, resource_type: int, name: str,
                  api: str = "", log_denied: bool = True) -> bool:
        allowed, rule = self._decide(principal, host, operation, resource_type, name)
        if (not allowed and log_denied) or audit.isEnabledFor(logging.DEBUG):
            audit.log(logging.DEBUG if allowed else logging.INFO,
                      "Principal = %s is %s operation = %s from host = %s on resource = %s:LITERAL:%s for "
                      "request = %s with resourceRefCount = 1 based on rule %s", principal,
                      "Allowed" if allowed else "Denied", Operation(operation).name, host,
                      ResourceType(resource_type).title, name, api, rule)
        return allowed

    def _decide(self, principal: str, host: str, operation: int, resource_type: int, name: str):
        if principal in self.super_users:
            return True, "SuperUser"
        applying = [acl for acl in self.acls if acl.applies_to(resource_type, name)]
        granting = [acl for acl in applying if acl.grants(principal, host, operation)]
        for acl in granting:
            if acl.permission == Permission.DENY:
                return False, f"MatchingAcl(acl={acl.describe()})"
        for acl in granting:
            if acl.permission == Permission.ALLOW:
                return True, f"MatchingAcl(acl={acl.describe()})"
        if applying or not self.allow_if_no_acl:
            return False, "DefaultDeny"
        return True, "DefaultAllow"

    def allows_some(self, principal: str, host: str, operation: int, resource_type: int) -> bool:
        """Whether the principal may do ``operation`` on some resource of this type (Kafka's
        authorizeByResourceType, which InitProducerId asks for idempotent producers): allowed
        for a name no ACL names (Kafka probes "hardcode"), or by an ALLOW of exactly this
        operation (or ALL) that no DENY cancels: a literal ``*`` DENY cancels all, a literal or
        prefixed DENY the names it covers."""
        if self._decide(principal, host, operation, resource_type, "hardcode")[0]:
            return True
        mine = [a for a in self.acls if a.resource_type == resource_type and a.principal in (principal, ALL_PRINCIPALS)
                and a.host in (host, WILDCARD) and a.operation in (operation, Operation.ALL)]
        denies = [a for a in mine if a.permission == Permission.DENY]
        if any(a.name == WILDCARD and a.pattern == PatternType.LITERAL for a in denies):
            return False
        for allow in (a for a in mine if a.permission == Permission.ALLOW):
            if allow.pattern == PatternType.LITERAL:
                if allow.name == WILDCARD or not any(
                        (d.pattern == PatternType.LITERAL and d.name == allow.name)
                        or (d.pattern == PatternType.PREFIXED and allow.name.startswith(d.name)) for d in denies):
                    return True
            elif not any(d.pattern == PatternType.PREFIXED and allow.name.startswith(d.name) for d in denies):
                return True
        return False

    def operations(self, principal: str, host: str, resource_type: int, name: str) -> int:
        """The authorized-operations bit field of a resource for this principal."""
        return sum(1 << op for op in SUPPORTED[resource_type]
                   if self._decide(principal, host, op, resource_type, name)[0])

    # --- changes ---------------------------------------------------------------------------
    def add(self, acls) -> None:
        self._change(lambda current: current | set(acls))

    def remove(self, acls) -> None:
        self._change(lambda current: current - set(acls))

    def _change(self, how) -> None:
        """Apply ``how`` to the ACLs and store the result before it takes effect."""
        changed = how(self.acls)
        if self.path is not None:
            folder = os.path.dirname(self.path)
            os.makedirs(folder, exist_ok=True)
            with locked(folder):
                write_atomically(self.path, {"acls": [asdict(acl) for acl in sorted(changed)]})
        self.acls = changed
