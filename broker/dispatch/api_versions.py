"""ApiVersions, generated from the protocol registry and limited to what this broker serves.

From v3 the answer carries the features as Kafka 4.3.1 does (KIP-584): the ranges its software
supports, and the levels finalized in this cluster, those of a Kafka 4.3.1 cluster formatted with
transaction.version=1, share.version=0 and streams.version=0, which is what groupbroker serves
(clients act on the finalized levels only: a Java producer uses transaction version 2 only where
it is finalized). Before v4 a supported range starting at 0 is left out, as Kafka leaves it out:
older clients, librdkafka 2.0's among them, fail to read it (KAFKA-17492). An ApiVersions request at a version we do not know is answered at v0 with
UNSUPPORTED_VERSION and our own ApiVersions range, so the client can retry (KIP-511).
"""

from __future__ import annotations

import re

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.messages import RESPONSES
from protocol.registry import API_TABLE

ApiVersionsResponse = RESPONSES[ApiKey.API_VERSIONS].cls

#: Every API this broker answers, hence what ApiVersions advertises and `groupbroker apis` lists
#: (the broker checks its dispatch table against it at start).
SERVED_APIS = frozenset({
    ApiKey.API_VERSIONS,
    # authentication (a SASL listener's session answers them before; broker/dispatch/handlers.py after)
    ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE,
    # SCRAM users (broker/security/scram_apis.py)
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
    # ACLs (broker/security/acl_apis.py)
    ApiKey.CREATE_ACLS, ApiKey.DESCRIBE_ACLS, ApiKey.DELETE_ACLS,
    # the data plane (broker/data/plane.py)
    ApiKey.METADATA, ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.LIST_OFFSETS, ApiKey.CREATE_TOPICS,
    ApiKey.DELETE_TOPICS, ApiKey.DESCRIBE_PRODUCERS, ApiKey.OFFSET_FOR_LEADER_EPOCH,
    # topic and cluster admin (broker/data/topic_admin.py, cluster_admin.py)
    ApiKey.CREATE_PARTITIONS, ApiKey.DELETE_RECORDS, ApiKey.DESCRIBE_CLUSTER,
    ApiKey.DESCRIBE_LOG_DIRS, ApiKey.ELECT_LEADERS,
    # topic and broker configs (broker/data/config_apis.py)
    ApiKey.DESCRIBE_CONFIGS, ApiKey.ALTER_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS,
    # the group coordinator (broker/group_runtime/router.py)
    ApiKey.FIND_COORDINATOR, ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT,
    ApiKey.LEAVE_GROUP, ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH, ApiKey.DESCRIBE_GROUPS,
    ApiKey.LIST_GROUPS, ApiKey.DELETE_GROUPS, ApiKey.OFFSET_DELETE,
    ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.CONSUMER_GROUP_DESCRIBE, ApiKey.TXN_OFFSET_COMMIT,
    # the transaction coordinator (broker/txn_runtime/apis.py)
    ApiKey.INIT_PRODUCER_ID, ApiKey.ADD_PARTITIONS_TO_TXN, ApiKey.ADD_OFFSETS_TO_TXN, ApiKey.END_TXN,
    ApiKey.DESCRIBE_TRANSACTIONS, ApiKey.LIST_TRANSACTIONS,
})
_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?\Z")
#: Where the advertised range starts below the versions served: Produce from v0, as Kafka 4
#: advertises it (KAFKA-18659: librdkafka before 2.10 will not produce to a broker whose Produce
#: starts at v3), though a request at v0-2 is refused like any unknown version: the connection
#: is closed (Kafka's SocketServer, UnsupportedVersionException while parsing the header).
ADVERTISED_MIN = {ApiKey.PRODUCE: 0}

#: The feature ranges Kafka 4.3.1's software supports, in the order it lists them.
SUPPORTED_FEATURES = (("group.version", 0, 1), ("kraft.version", 0, 1), ("metadata.version", 7, 30),
                      ("share.version", 0, 1), ("streams.version", 0, 1), ("transaction.version", 0, 2),
                      ("eligible.leader.replicas.version", 0, 1))
#: The finalized feature levels, in the order Kafka lists them (a level 0 is not listed).
FINALIZED_FEATURES = (("group.version", 1), ("transaction.version", 1),
                      ("eligible.leader.replicas.version", 1), ("metadata.version", 30))
FINALIZED_FEATURES_EPOCH = 1


def api_versions_answer(version: int, request, served: list[int]):
    if version >= 3 and not (_SOFTWARE.match(request.client_software_name)
                             and _SOFTWARE.match(request.client_software_version)):
        return ApiVersionsResponse(error_code=ErrorCode.INVALID_REQUEST)
    entry = ApiVersionsResponse.ApiVersion
    features = {} if version < 3 else dict(
        supported_features=tuple(ApiVersionsResponse.SupportedFeatureKey(name=n, min_version=lo, max_version=hi)
                                 for n, lo, hi in SUPPORTED_FEATURES if lo > 0 or version >= 4),
        finalized_features_epoch=FINALIZED_FEATURES_EPOCH,
        finalized_features=tuple(ApiVersionsResponse.FinalizedFeatureKey(name=n, max_version_level=level,
                                                                         min_version_level=level)
                                 for n, level in FINALIZED_FEATURES))
    return ApiVersionsResponse(error_code=ErrorCode.NONE, api_keys=tuple(
        entry(api_key=k, min_version=ADVERTISED_MIN.get(k, API_TABLE[k].min_version),
              max_version=API_TABLE[k].max_version)
        for k in sorted(served)), **features)


def unsupported_version_answer():
    spec = API_TABLE[ApiKey.API_VERSIONS]
    return ApiVersionsResponse(error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=(
        ApiVersionsResponse.ApiVersion(api_key=ApiKey.API_VERSIONS, min_version=spec.min_version,
                                       max_version=spec.max_version),))
