"""Kafka's StandardAuthorizer decisions: super users, DENY over ALLOW, implied DESCRIBE,
literal/prefixed/wildcard patterns, hosts, the no-ACL default, authorizeByResourceType,
authorized-operation bits, filters, and the ACL file surviving a reopen."""

from __future__ import annotations

from security.acls import (Acl, AclFilter, Authorizer, Operation as O, PatternType as P,
                           Permission as A, ResourceType as R)

LIT, PRE = P.LITERAL, P.PREFIXED


def authorizer(*acls, super_users=None, allow=False, data_dir=None) -> Authorizer:
    a = Authorizer(data_dir, super_users, allow)
    a.add(acls)
    return a


def can(a: Authorizer, op, rtype, name, principal="User:alice", host="10.0.0.1") -> bool:
    return a.authorize(principal, host, op, rtype, name)


def test_super_users_need_no_acl_and_deny_wins_for_everyone_else():
    a = authorizer(Acl(R.TOPIC, "t", LIT, "User:*", "*", O.READ, A.ALLOW),
                   Acl(R.TOPIC, "t", LIT, "User:alice", "*", O.READ, A.DENY), super_users="User:admin; User:ops")
    assert can(a, O.DELETE, R.TOPIC, "t", "User:admin")
    assert not can(a, O.READ, R.TOPIC, "t")
    assert can(a, O.READ, R.TOPIC, "t", "User:bob")


def test_read_write_delete_alter_imply_describe_but_deny_implies_nothing():
    a = authorizer(Acl(R.TOPIC, "t", LIT, "User:alice", "*", O.WRITE, A.ALLOW),
                   Acl(R.GROUP, "g", LIT, "User:alice", "*", O.READ, A.DENY),
                   Acl(R.GROUP, "g", LIT, "User:alice", "*", O.DESCRIBE, A.ALLOW),
                   Acl(R.TOPIC, "c", LIT, "User:alice", "*", O.ALTER_CONFIGS, A.ALLOW))
    assert can(a, O.DESCRIBE, R.TOPIC, "t") and not can(a, O.READ, R.TOPIC, "t")
    assert can(a, O.DESCRIBE, R.GROUP, "g") and not can(a, O.READ, R.GROUP, "g")
    assert can(a, O.DESCRIBE_CONFIGS, R.TOPIC, "c")


def test_prefixed_and_wildcard_patterns_and_hosts():
    a = authorizer(Acl(R.TOPIC, "orders-", PRE, "User:alice", "*", O.READ, A.ALLOW),
                   Acl(R.GROUP, "*", LIT, "User:alice", "10.0.0.1", O.ALL, A.ALLOW))
    assert can(a, O.READ, R.TOPIC, "orders-eu") and can(a, O.READ, R.TOPIC, "orders-")
    assert not can(a, O.READ, R.TOPIC, "order")
    assert can(a, O.DELETE, R.GROUP, "any-group")
    assert not can(a, O.READ, R.GROUP, "any-group", host="10.0.0.2")


def test_without_any_acl_on_a_resource_the_default_applies():
    open_broker = authorizer(Acl(R.TOPIC, "guarded", LIT, "User:bob", "*", O.READ, A.ALLOW), allow=True)
    assert can(open_broker, O.READ, R.TOPIC, "free")               # no ACL names it
    assert not can(open_broker, O.READ, R.TOPIC, "guarded")         # an ACL names it: not for alice
    assert not can(authorizer(), O.READ, R.TOPIC, "free")


def test_some_topic_writable_as_kafkas_authorize_by_resource_type():
    assert authorizer(Acl(R.TOPIC, "t", LIT, "User:alice", "*", O.WRITE, A.ALLOW)).allows_some(
        "User:alice", "h", O.WRITE, R.TOPIC)
    assert not authorizer(Acl(R.TOPIC, "t", LIT, "User:alice", "*", O.WRITE, A.ALLOW),
                          Acl(R.TOPIC, "t", PRE, "User:alice", "*", O.WRITE, A.DENY)).allows_some(
        "User:alice", "h", O.WRITE, R.TOPIC)
    assert not authorizer(Acl(R.TOPIC, "t", LIT, "User:alice", "*", O.READ, A.ALLOW)).allows_some(
        "User:alice", "h", O.WRITE, R.TOPIC)


def test_authorized_operation_bits():
    a = authorizer(Acl(R.GROUP, "g", LIT, "User:alice", "*", O.READ, A.ALLOW))
    assert a.operations("User:alice", "h", R.GROUP, "g") == (1 << O.READ) | (1 << O.DESCRIBE)
    assert authorizer(super_users="User:alice").operations("User:alice", "h", R.TOPIC, "t") == 3576


def test_filters_as_describe_and_delete_acls_read_them():
    literal = Acl(R.TOPIC, "orders", LIT, "User:alice", "*", O.READ, A.ALLOW)
    prefixed = Acl(R.TOPIC, "ord", PRE, "User:bob", "*", O.WRITE, A.ALLOW)
    wildcard = Acl(R.TOPIC, "*", LIT, "User:*", "*", O.DESCRIBE, A.ALLOW)
    acls = [literal, prefixed, wildcard]
    match = AclFilter(R.TOPIC, "orders", P.MATCH, None, None, O.ANY, A.ANY)
    assert [acl for acl in acls if match.matches(acl)] == acls
    any_pattern = AclFilter(R.ANY, "orders", P.ANY, None, None, O.ANY, A.ANY)
    assert [acl for acl in acls if any_pattern.matches(acl)] == [literal]
    by_principal = AclFilter(R.ANY, None, P.ANY, "User:bob", None, O.ANY, A.ANY)
    assert [acl for acl in acls if by_principal.matches(acl)] == [prefixed]


def test_acls_are_stored_and_read_back(tmp_path):
    acl = Acl(R.CLUSTER, "kafka-cluster", LIT, "User:ops", "*", O.ALTER, A.ALLOW)
    authorizer(acl, data_dir=str(tmp_path))
    assert Authorizer(str(tmp_path), None, False).acls == {acl}
