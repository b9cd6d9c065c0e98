"""ACLs against Apache Kafka with its StandardAuthorizer: CreateAcls, DescribeAcls and DeleteAcls
at every version, Kafka's validation of each creation, and what a DENY does to the APIs it
guards. Both brokers run the authorizer with ``allow.everyone.if.no.acl.found=true`` (everything
not named by an ACL stays allowed, so Kafka's own controller traffic is unaffected); the tests
deny User:ANONYMOUS (a plaintext connection's principal) on their own resources only."""

import pytest
import trio

from protocol.api_keys import ApiKey
from protocol.registry import API_TABLE
from tests.conftest import ORACLE_SETTINGS
from tests.oracle.steps import connected, create_topic, own_pair, req, stable_member, sub, unique, versions
from tests.support.differential import Differential

AUTHORIZED = {**ORACLE_SETTINGS, "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
              "allow.everyone.if.no.acl.found": "true"}
TOPIC, GROUP, TXN = 2, 3, 5                        # resource types
ANY, MATCH, LITERAL, PREFIXED = 1, 2, 3, 4         # pattern types
ALL, READ, WRITE, DESCRIBE = 2, 3, 4, 8            # operations
DENY, ALLOW = 2, 3                                 # permissions
ME = "User:ANONYMOUS"
#: Kafka lists described ACLs from a HashMap of resources and HashSets of entries whose hashes
#: include enums' identity hashes: the order changes from one Kafka run to the next
HASHED = ("resources", "acls", "matching_acls")


@pytest.fixture(scope="module")
def authorizing_brokers(tmp_path_factory):
    """A Kafka and a groupbroker, each enforcing ACLs (started once for this module)."""
    with own_pair(tmp_path_factory.mktemp("acl-oracle"), AUTHORIZED) as pair:
        yield pair


@pytest.fixture
async def acl_oracle(authorizing_brokers):
    async with connected(authorizing_brokers) as oracle:
        yield oracle


def creation(name: str, *, resource=TOPIC, pattern=LITERAL, principal=ME, host="*", operation=READ,
             permission=DENY):
    return sub(ApiKey.CREATE_ACLS, "AclCreation", resource_type=resource, resource_name=name,
               resource_pattern_type=pattern, principal=principal, host=host, operation=operation,
               permission_type=permission)


def describe_filter(name: str | None, *, resource=TOPIC, pattern=LITERAL, principal=None, operation=1,
                    permission=1, host=None):
    return req(ApiKey.DESCRIBE_ACLS, resource_type_filter=resource, resource_name_filter=name,
               pattern_type_filter=pattern, principal_filter=principal, host_filter=host, operation=operation,
               permission_type=permission)


async def until_kafka_sees(oracle: Differential, body) -> None:
    """Kafka's authorizer learns new ACLs from its metadata log a moment after CreateAcls: wait
    until it describes as many as groupbroker does (which has them at once)."""
    with trio.fail_after(10):
        while True:
            ours, kafka = await oracle.both(ApiKey.DESCRIBE_ACLS, 3, body)
            if sum(len(r.acls) for r in kafka.resources) == sum(len(r.acls) for r in ours.resources):
                return
            await trio.sleep(0.05)


@pytest.mark.parametrize("version", versions(ApiKey.CREATE_ACLS))
async def test_create_acls_validation(acl_oracle, request, version):
    name = unique(request)
    cases = {
        "a literal deny": creation(name),
        "a prefixed allow": creation(name + "-", pattern=PREFIXED, permission=ALLOW, operation=WRITE),
        "resource type UNKNOWN": creation(name, resource=0),
        "a resource type Kafka does not know": creation(name, resource=99),
        "resource type ANY": creation(name, resource=1),
        "pattern type MATCH": creation(name, pattern=MATCH),
        "pattern type ANY": creation(name, pattern=ANY),
        "an empty resource name": creation(""),
        "a principal without a type": creation(name, principal="ANONYMOUS"),
        "an unknown operation": creation(name, operation=0),
        "operation ANY": creation(name, operation=1),
        "permission ANY": creation(name, permission=1),
        "an empty host": creation(name, host=""),
        "a wildcard host and prefix": creation("*", pattern=PREFIXED),
        "an operation the resource type does not have": creation(name, resource=TXN, operation=READ),
    }
    for what, acl in cases.items():
        if version == 0 and acl.resource_pattern_type != LITERAL:
            continue
        await acl_oracle.call(ApiKey.CREATE_ACLS, version, req(ApiKey.CREATE_ACLS, creations=(acl,)), what=what)


@pytest.mark.parametrize("version", versions(ApiKey.DESCRIBE_ACLS))
async def test_describe_and_delete_acls(acl_oracle, request, version):
    name = unique(request)
    await acl_oracle.call(ApiKey.CREATE_ACLS, 3, req(ApiKey.CREATE_ACLS, creations=(
        creation(name), creation(name, operation=WRITE), creation(name + "-g", resource=GROUP),
        creation(name + "-p", pattern=PREFIXED, permission=ALLOW, principal="User:alice"))))
    await until_kafka_sees(acl_oracle, describe_filter(None, resource=1, pattern=ANY, principal=None))
    filters = {
        "the literal topic": describe_filter(name),
        "matching the topic": describe_filter(name, pattern=MATCH),
        "the prefix": describe_filter(name + "-p", pattern=PREFIXED),
        "by principal": describe_filter(None, resource=1, pattern=ANY, principal="User:alice"),
        "a group": describe_filter(name + "-g", resource=GROUP),
        "deny writes": describe_filter(name, operation=WRITE, permission=DENY),
        "nothing": describe_filter(name + "-none"),
        "an invalid filter (pattern type UNKNOWN)": describe_filter(name, pattern=0),
    }
    for what, body in filters.items():
        if version == 0 and body.pattern_type_filter != LITERAL:
            continue
        await acl_oracle.call(ApiKey.DESCRIBE_ACLS, version, body, what=what, unordered=HASHED)
    delete = req(ApiKey.DELETE_ACLS, filters=(
        sub(ApiKey.DELETE_ACLS, "DeleteAclsFilter", resource_type_filter=TOPIC, resource_name_filter=name,
            pattern_type_filter=LITERAL, principal_filter=None, host_filter=None, operation=WRITE, permission_type=1),
        sub(ApiKey.DELETE_ACLS, "DeleteAclsFilter", resource_type_filter=GROUP, resource_name_filter=None,
            pattern_type_filter=LITERAL, principal_filter=ME, host_filter="*", operation=1, permission_type=DENY),
        sub(ApiKey.DELETE_ACLS, "DeleteAclsFilter", resource_type_filter=TOPIC, resource_name_filter=name + "-x",
            pattern_type_filter=LITERAL, principal_filter=None, host_filter=None, operation=1, permission_type=1)))
    await acl_oracle.call(ApiKey.DELETE_ACLS, min(version, API_TABLE[ApiKey.DELETE_ACLS].max_version), delete,
                          unordered=HASHED)


async def test_what_a_deny_does(acl_oracle, request):
    topic, group, allowed = unique(request, "-t"), unique(request, "-g"), unique(request, "-ok")
    await create_topic(acl_oracle, topic, 1)
    await create_topic(acl_oracle, allowed, 1)
    await acl_oracle.call(ApiKey.CREATE_ACLS, 3, req(ApiKey.CREATE_ACLS, creations=(
        creation(topic, operation=ALL), creation(group, resource=GROUP, operation=READ))))
    await until_kafka_sees(acl_oracle, describe_filter(None, resource=1, pattern=ANY, principal=None))
    meta = req(ApiKey.METADATA, topics=tuple(sub(ApiKey.METADATA, "MetadataRequestTopic", name=t)
                                             for t in (topic, allowed)),
               allow_auto_topic_creation=False, include_topic_authorized_operations=True)
    await acl_oracle.call(ApiKey.METADATA, 12, meta, what="a denied and an allowed topic")
    await acl_oracle.call(ApiKey.OFFSET_COMMIT, 9, req(ApiKey.OFFSET_COMMIT, group_id=group, generation_id_or_member_epoch=-1,
                                                       topics=(sub(ApiKey.OFFSET_COMMIT, "OffsetCommitRequestTopic", name=allowed, partitions=(
                                                           sub(ApiKey.OFFSET_COMMIT, "OffsetCommitRequestPartition", partition_index=0,
                                                               committed_offset=1, committed_metadata=""),)),)),
                          what="a commit for a denied group")
    await acl_oracle.call(ApiKey.OFFSET_COMMIT, 9, req(ApiKey.OFFSET_COMMIT, group_id=group + "-free", generation_id_or_member_epoch=-1,
                                                       topics=tuple(sub(ApiKey.OFFSET_COMMIT, "OffsetCommitRequestTopic", name=t, partitions=(
                                                           sub(ApiKey.OFFSET_COMMIT, "OffsetCommitRequestPartition", partition_index=0,
                                                               committed_offset=1, committed_metadata=""),)) for t in (topic, allowed))),
                          what="a commit of a denied and an allowed topic")
    await stable_member(acl_oracle, group + "-free")
    await acl_oracle.call(ApiKey.DESCRIBE_GROUPS, 5, req(ApiKey.DESCRIBE_GROUPS, groups=(group, group + "-free"),
                                                         include_authorized_operations=True))
    await acl_oracle.call(ApiKey.JOIN_GROUP, 9, req(ApiKey.JOIN_GROUP, group_id=group, session_timeout_ms=30000,
                                                    rebalance_timeout_ms=30000, member_id="", protocol_type="consumer",
                                                    protocols=()), what="a join of a denied group")
    await acl_oracle.call(ApiKey.FIND_COORDINATOR, 4, req(ApiKey.FIND_COORDINATOR, key_type=0,
                                                          coordinator_keys=(group, group + "-free")))
    await acl_oracle.call(ApiKey.FIND_COORDINATOR, 3, req(ApiKey.FIND_COORDINATOR, key_type=0, key=group),
                          what="before v4, a denied group")
    await acl_oracle.call(ApiKey.DELETE_GROUPS, 2, req(ApiKey.DELETE_GROUPS, groups_names=(group, group + "-free")))


async def test_a_fetch_session_is_authorized_at_each_fetch(acl_oracle, request):
    """Kafka checks READ on every partition a Fetch reads, those an incremental fetch session
    names included: a DENY added after the session began applies at its next fetch."""
    from tests.oracle.test_data import F, batch, fetch_body, produce_body
    from tests.support.differential import Alias
    topic, other = unique(request), unique(request, "-other")
    for name in (topic, other):
        await create_topic(acl_oracle, name, 1)
        await acl_oracle.call(ApiKey.PRODUCE, 9, produce_body(9, name, None, {0: batch([b"v"])}))
    both = {(topic, None): {0: 0}, (other, None): {0: 0}}
    first = await acl_oracle.call(F, 12, fetch_body(12, both, epoch=0), what="a new session")
    session = Alias(first["session_id"])
    await acl_oracle.call(ApiKey.CREATE_ACLS, 3, req(ApiKey.CREATE_ACLS, creations=(creation(topic, operation=READ),)))
    await until_kafka_sees(acl_oracle, describe_filter(topic))
    denied = await acl_oracle.call(F, 12, fetch_body(12, {}, session_id=session, epoch=1),
                                   what="the session, one topic denied")
    # the other topic's record again (the fetch did not move on), then the denied topic
    assert [(t["topic"], p["error_code"]) for t in denied["responses"] for p in t["partitions"]] == [
        (other, 0), (topic, 29)]
    await acl_oracle.call(F, 12, fetch_body(12, {}, session_id=session, epoch=2), what="again: the denial again")
    await acl_oracle.call(F, 12, fetch_body(12, both, epoch=-1), what="without a session")


async def test_what_a_deny_does_to_a_streams_group(acl_oracle, request):
    """StreamsGroupHeartbeat and StreamsGroupDescribe under ACLs (KIP-1071): READ on the group,
    DESCRIBE on every topic of the topology, and a described group that names a topic the
    client may no longer describe. (CREATE on the internal topics needs an ACL on the cluster,
    which would stop this Kafka's own traffic, ANONYMOUS too: tests/integration/test_authorization.py
    has it.)"""
    from tests.oracle.test_streams_groups import HEARTBEAT, beat, describe, subtopology, word_count
    group, topic, hidden = unique(request, "-g"), unique(request, "-t"), unique(request, "-hidden")
    await create_topic(acl_oracle, topic, 2)
    await create_topic(acl_oracle, hidden, 1)
    seen = group + "-seen"
    await acl_oracle.call(HEARTBEAT, 0, beat(seen, topology=sub(HEARTBEAT, "Topology", epoch=0, subtopologies=(
        subtopology("0", sources=(topic, hidden)),))), what="a group reading two topics, before any ACL")
    await acl_oracle.call(ApiKey.CREATE_ACLS, 3, req(ApiKey.CREATE_ACLS, creations=(
        creation(group + "-denied", resource=GROUP, operation=READ), creation(hidden, operation=DESCRIBE))))
    await until_kafka_sees(acl_oracle, describe_filter(None, resource=1, pattern=ANY, principal=None))
    await acl_oracle.call(HEARTBEAT, 0, beat(group + "-denied", topology=word_count(group, topic)),
                          what="a denied group")
    await acl_oracle.call(HEARTBEAT, 0, beat(group, topology=sub(HEARTBEAT, "Topology", epoch=0, subtopologies=(
        subtopology("0", sources=(topic, hidden)),))), what="a topology naming a topic the client may not describe")
    await acl_oracle.call(HEARTBEAT, 0, beat(group, topology=word_count(group, "__consumer_offsets")),
                          what="an internal topic: refused before any topic is authorized")
    await acl_oracle.call(ApiKey.STREAMS_GROUP_DESCRIBE, 0, describe(group + "-denied", seen),
                          what="a denied group, and one naming a topic the client may no longer describe")
