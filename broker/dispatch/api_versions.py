"""ApiVersions, generated from the protocol registry and limited to what this broker serves.

From v3 the answer carries the features as Kafka 4.3.1 does (KIP-584): the ranges its software
supports, and the levels finalized in this cluster, those of a freshly formatted Kafka 4.3.1
cluster (share.version and streams.version 1, transaction.version 2) unless
groupbroker.feature.share.version, .streams.version or .transaction.version say otherwise (clients
act on the finalized levels only: a Java producer uses transaction version 2 only where it is
finalized; the API ranges never depend on them, as in Kafka). Before v4 a supported range starting at 0 is left out, as Kafka leaves it out:
older clients, librdkafka 2.0's among them, fail to read it (KAFKA-17492). An ApiVersions request
at a version we do not know is answered at v0 with UNSUPPORTED_VERSION and our own ApiVersions
range, so the client can retry (KIP-511).
"""

from __future__ import annotations

import re

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.messages import RESPONSES
from protocol.registry import API_TABLE

ApiVersionsResponse = RESPONSES[ApiKey.API_VERSIONS].cls

_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?\Z")
#: The feature ranges Kafka 4.3.1's software supports, in the order it lists them.
SUPPORTED_FEATURES = (("group.version", 0, 1), ("kraft.version", 0, 1), ("metadata.version", 7, 30),
                      ("share.version", 0, 1), ("streams.version", 0, 1), ("transaction.version", 0, 2),
                      ("eligible.leader.replicas.version", 0, 1))
#: The finalized feature levels groupbroker may set, in the order Kafka lists them (a level 0
#: is not listed); share.version, streams.version and transaction.version are
#: groupbroker.feature.*'s settings
FINALIZED_FEATURES = (("group.version", 1), ("share.version", 1), ("streams.version", 1), ("transaction.version", 2),
                      ("eligible.leader.replicas.version", 1), ("metadata.version", 30))
FINALIZED_FEATURES_EPOCH = 1


def finalized_features(levels: dict[str, int]) -> tuple[tuple[str, int], ...]:
    """The finalized levels with ``levels`` set, level 0 left out."""
    return tuple((name, levels.get(name, level)) for name, level in FINALIZED_FEATURES
                 if levels.get(name, level) > 0)


def api_versions_answer(version: int, request, served, finalized=finalized_features({})):
    """``served``: the declarations (``ApiSpec``) of the APIs served, by API key; ``finalized``:
    the features' levels (:func:`finalized_features`)."""
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
                                 for n, level in finalized))
    return ApiVersionsResponse(error_code=ErrorCode.NONE, api_keys=tuple(
        entry(api_key=spec.key, min_version=spec.advertised[0], max_version=spec.advertised[1])
        for spec in served), **features)


def unsupported_version_answer():
    spec = API_TABLE[ApiKey.API_VERSIONS]
    return ApiVersionsResponse(error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=(
        ApiVersionsResponse.ApiVersion(api_key=ApiKey.API_VERSIONS, min_version=spec.min_version,
                                       max_version=spec.max_version),))
