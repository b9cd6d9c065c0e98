"""Every API is declared once, beside its handler (an ``ApiSpec``), and what a running broker
does is derived from those declarations: the APIs it answers and ApiVersions advertises, the
handler each request reaches, which requests may be pipelined, how a whole request fails, which
may get an injected error. A handler without a declaration fails here."""

import inspect
from operator import attrgetter

import pytest

from protocol import REQUESTS
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.header import encode_response
from broker.api_spec import Runs
from tests.support.trio_client import TrioClient
from broker.dispatch.served import API_SPECS, INJECTABLE_APIS, SERVED_APIS
from broker.faults.rules import FaultError


@pytest.fixture
async def broker(serve_broker):
    return await serve_broker({"group.initial.rebalance.delay.ms": "0"})


async def test_api_versions_advertises_exactly_the_declared_apis(broker):
    client = await TrioClient.connect(broker.port)
    api = REQUESTS[ApiKey.API_VERSIONS].cls
    answer = await client.call(ApiKey.API_VERSIONS, 3, api(client_software_name="t", client_software_version="1"))
    advertised = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}
    assert advertised == {key: spec.advertised for key, spec in API_SPECS.items()}
    assert advertised[ApiKey.PRODUCE][0] == 0 < min(API_SPECS[ApiKey.PRODUCE].versions)


async def test_each_api_reaches_the_handler_its_declaration_names(broker):
    routes, parts = broker.handlers.routes, broker.handlers.parts
    assert set(routes) == SERVED_APIS
    for key, spec in API_SPECS.items():
        declared = attrgetter(spec.handler)(parts[spec.runs])
        assert inspect.unwrap(routes[key]) == declared, spec.key.name
        assert (routes[key] != declared) == spec.answers_refusals, spec.key.name


async def test_every_handler_has_a_declaration(broker):
    """A public coroutine method taking (ctx, request) on a part that answers APIs is a handler:
    each must be named by one declaration."""
    declared = {(spec.runs, spec.handler) for spec in API_SPECS.values()}
    undeclared = []
    for runs, part in broker.handlers.parts.items():
        holders = {""} | {spec.handler.rpartition(".")[0] + "." for spec in API_SPECS.values()
                          if spec.runs is runs and "." in spec.handler}
        for prefix in holders:
            holder = attrgetter(prefix[:-1])(part) if prefix else part
            for name, method in inspect.getmembers(type(holder), inspect.iscoroutinefunction):
                if not name.startswith("_") and list(inspect.signature(method).parameters)[1:] in (
                        ["ctx", "req"], ["ctx", "request"], ["ctx", "body"]):
                    if (runs, prefix + name) not in declared:
                        undeclared.append(f"{type(holder).__name__}.{name}")
    assert undeclared == []


def test_only_single_group_requests_that_never_wait_may_be_pipelined():
    pipelined = {(key, v) for key, spec in API_SPECS.items() for v in spec.versions if spec.pipelined(v)}
    assert {API_SPECS[key].runs for key, _ in pipelined} == {Runs.GROUP_COORDINATOR}
    assert {ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP} & {key for key, _ in pipelined} == set()
    offset_fetch = {v for key, v in pipelined if key == ApiKey.OFFSET_FETCH}
    assert offset_fetch == set(range(min(API_SPECS[ApiKey.OFFSET_FETCH].versions), 8))  # one group before v8


@pytest.mark.parametrize("key", sorted(SERVED_APIS), ids=lambda key: ApiKey(key).name)
def test_every_declared_failure_answer_encodes_at_every_version(key):
    spec = API_SPECS[key]
    for version in spec.versions:
        answer = spec.failed(version, REQUESTS[key].cls(), ErrorCode.UNKNOWN_SERVER_ERROR, "failed")
        assert encode_response(key, version, 1, answer)


async def test_fault_injection_answers_errors_only_for_apis_declared_injectable(broker):
    faults = broker.faults
    for key in sorted(SERVED_APIS):
        if key in INJECTABLE_APIS:
            faults.add(key, error="NOT_COORDINATOR", count=1)
        else:
            with pytest.raises(FaultError, match="cannot be answered with an injected error"):
                faults.add(key, error="NOT_COORDINATOR")
    assert faults.clear() == len(INJECTABLE_APIS)
