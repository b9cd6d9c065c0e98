"""ApiVersions, generated from the protocol registry and limited to what this broker serves.

No optional tagged fields are sent at v3+ (librdkafka 2.0.2, Debian's kcat, misreads
non-empty ones). An ApiVersions request at a version we do not know is answered at v0 with
UNSUPPORTED_VERSION and our own ApiVersions range, so the client can retry (KIP-511).
"""

from __future__ import annotations

import re

from protocol.errors import ErrorCode
from protocol.messages import RESPONSES
from protocol.registry import API_TABLE

ApiVersionsResponse = RESPONSES[18].cls

#: Every API this broker answers, hence what ApiVersions advertises and `groupbroker apis` lists
#: (the broker checks its dispatch table against it at start).
SERVED_APIS = frozenset({
    18,                                          # ApiVersions
    3, 0, 1, 2, 19, 20, 22,                      # the data plane (broker/data/plane.py)
    37, 21, 60, 35, 43,                          # topic and cluster admin (broker/*_admin.py)
    32, 33, 44,                                  # topic and broker configs (broker/data/config_apis.py)
    10, 11, 14, 12, 13, 8, 9, 15, 16, 42, 47,    # the group coordinator (broker/group_runtime/router.py)
})
_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?\Z")


def api_versions_answer(version: int, request, served: list[int]):
    if version >= 3 and not (_SOFTWARE.match(request.client_software_name)
                             and _SOFTWARE.match(request.client_software_version)):
        return ApiVersionsResponse(error_code=ErrorCode.INVALID_REQUEST)
    entry = ApiVersionsResponse.ApiVersion
    return ApiVersionsResponse(error_code=ErrorCode.NONE, api_keys=tuple(
        entry(api_key=k, min_version=API_TABLE[k].min_version, max_version=API_TABLE[k].max_version)
        for k in sorted(served)))


def unsupported_version_answer():
    spec = API_TABLE[18]
    return ApiVersionsResponse(error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=(
        ApiVersionsResponse.ApiVersion(api_key=18, min_version=spec.min_version,
                                       max_version=spec.max_version),))
