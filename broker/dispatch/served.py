"""Every API groupbroker serves, gathered from the declarations beside their handlers, and the
tables derived from them: what ApiVersions advertises, what fault injection may answer with an
error, and each API's whole-request error answer."""

from __future__ import annotations

from itertools import chain

from protocol.errors import ErrorCode

from broker.api_spec import ApiSpec
from broker.data.apis import DATA_APIS
from broker.dispatch.connection_apis import CONNECTION_APIS
from broker.group_runtime.apis import GROUP_APIS
from broker.txn_runtime.apis import TXN_APIS


def _by_key(*declarations: tuple[ApiSpec, ...]) -> dict[int, ApiSpec]:
    specs: dict[int, ApiSpec] = {}
    for spec in chain(*declarations):
        if spec.key in specs:
            raise ValueError(f"{spec.key.name} is declared twice")
        specs[spec.key] = spec
    return specs


API_SPECS = _by_key(CONNECTION_APIS, DATA_APIS, GROUP_APIS, TXN_APIS)
#: what ApiVersions advertises and `groupbroker apis` lists
SERVED_APIS = frozenset(API_SPECS)
#: the APIs whose requests fault injection may answer with an error code
INJECTABLE_APIS = frozenset(key for key, spec in API_SPECS.items() if spec.injectable)


def whole_request_error(key: int, version: int, request, error: ErrorCode, message: str | None = None):
    """The answer to ``request`` (API ``key`` at ``version``) when all of it fails with ``error``."""
    return API_SPECS[key].failed(version, request, error, message)
