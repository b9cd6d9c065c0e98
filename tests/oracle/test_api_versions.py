"""ApiVersions against Apache Kafka 4.3.1: the ranges we advertise, and the APIs we do not serve."""

import dataclasses
import logging

import pytest

from protocol.api_keys import ApiKey
from protocol.messages import REQUESTS
from protocol.registry import API_TABLE
from broker.dispatch.served import SERVED_APIS

log = logging.getLogger(__name__)



def ranges(answer) -> dict[int, tuple[int, int]]:
    return {e.api_key: (e.min_version, e.max_version) for e in answer.api_keys}


async def test_every_api_we_serve_has_kafkas_range(oracle):
    ours, kafka = await oracle.both(ApiKey.API_VERSIONS, 3, oracle.ours.client.session.api_versions_request(3))
    ours, kafka = ranges(ours), ranges(kafka)
    assert set(ours) == SERVED_APIS
    differing = {ApiKey(k).name: (ours[k], kafka.get(k)) for k in ours if ours[k] != kafka.get(k)}
    assert not differing, f"ours vs Kafka 4.3.1: {differing}"


async def test_the_apis_kafka_serves_and_we_do_not(oracle):
    """Not a goal to close here: the list makes the gap visible (printed with -s, logged)."""
    _, kafka = await oracle.both(ApiKey.API_VERSIONS, 3, oracle.ours.client.session.api_versions_request(3))
    missing = sorted(set(ranges(kafka)) - SERVED_APIS)
    names = [ApiKey(k).name if k in ApiKey._value2member_map_ else f"key {k}" for k in missing]
    log.warning("APIs Kafka 4.3.1 serves and groupbroker does not: %s", ", ".join(names))
    assert all(k in ranges(kafka) for k in SERVED_APIS)
    assert all(k in API_TABLE and k in REQUESTS for k in SERVED_APIS)


@pytest.mark.parametrize("version", [3, 4])
async def test_the_whole_answer_is_kafkas(oracle, version):
    """Everything but the API ranges above: error, throttle, supported features (in Kafka's
    order) and finalized ones (in our order)."""
    body = oracle.ours.client.session.api_versions_request(version)
    ours, kafka = await oracle.both(ApiKey.API_VERSIONS, version, body)
    order = [f.name for f in ours.finalized_features]
    kafka = dataclasses.replace(
        kafka, api_keys=tuple(e for e in kafka.api_keys if e.api_key in SERVED_APIS),
        finalized_features=tuple(sorted(kafka.finalized_features, key=lambda f: order.index(f.name))))
    oracle.compare(ApiKey.API_VERSIONS, version, ours, kafka)
