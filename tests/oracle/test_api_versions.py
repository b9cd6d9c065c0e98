"""ApiVersions against Apache Kafka 4.3.1: the ranges we advertise, and the APIs we do not serve."""

import dataclasses
import logging

import pytest

from protocol.api_keys import ApiKey
from protocol.messages import REQUESTS
from protocol.registry import API_TABLE
from broker.dispatch.served import SERVED_APIS

log = logging.getLogger(__name__)

#: APIs whose newest versions belong to an open issue: transaction version 2 (issue 30) brings
#: AddPartitionsToTxn v4-5, EndTxn v5 and TxnOffsetCommit v5.
PENDING = {ApiKey.ADD_PARTITIONS_TO_TXN: (0, 3), ApiKey.END_TXN: (0, 4), ApiKey.TXN_OFFSET_COMMIT: (0, 4)}


def ranges(answer) -> dict[int, tuple[int, int]]:
    return {e.api_key: (e.min_version, e.max_version) for e in answer.api_keys}


async def test_every_api_we_serve_has_kafkas_range(oracle):
    ours, kafka = await oracle.both(ApiKey.API_VERSIONS, 3, oracle.ours.client.session.api_versions_request(3))
    ours, kafka = ranges(ours), ranges(kafka)
    assert set(ours) == SERVED_APIS
    differing = {ApiKey(k).name: (ours[k], kafka.get(k)) for k in ours
                 if ours[k] != kafka.get(k) and k not in PENDING}
    assert not differing, f"ours vs Kafka 4.3.1: {differing}"
    for key, pending in PENDING.items():
        assert ours[key] == pending and kafka[key][1] > pending[1], key


async def test_the_apis_kafka_serves_and_we_do_not(oracle):
    """Not a goal to close here: the list makes the gap visible (printed with -s, logged)."""
    _, kafka = await oracle.both(ApiKey.API_VERSIONS, 3, oracle.ours.client.session.api_versions_request(3))
    missing = sorted(set(ranges(kafka)) - SERVED_APIS)
    names = [ApiKey(k).name if k in ApiKey._value2member_map_ else f"key {k}" for k in missing]
    log.warning("APIs Kafka 4.3.1 serves and groupbroker does not: %s", ", ".join(names))
    assert all(k in ranges(kafka) for k in SERVED_APIS)
    assert all(k in API_TABLE and k in REQUESTS for k in SERVED_APIS)


#: Finalized features whose level is an open issue's: Kafka 4.3 finalizes transaction version 2
#: (30); groupbroker finalizes what it serves.
PENDING_FEATURES = {"transaction.version": 1}


@pytest.mark.parametrize("version", [3, 4])
async def test_the_whole_answer_is_kafkas(oracle, version):
    """Everything but the API ranges above: error, throttle, supported features (in Kafka's
    order) and finalized ones (but for the open issues' levels, and in our order)."""
    body = oracle.ours.client.session.api_versions_request(version)
    ours, kafka = await oracle.both(ApiKey.API_VERSIONS, version, body)
    pending = set(PENDING)
    key = type(kafka.finalized_features[0])
    finalized = tuple(f for f in kafka.finalized_features if f.name not in PENDING_FEATURES) + tuple(
        key(name=n, max_version_level=level, min_version_level=level)
        for n, level in PENDING_FEATURES.items() if level is not None)
    order = [f.name for f in ours.finalized_features]
    kafka = dataclasses.replace(
        kafka, api_keys=tuple(e for e in kafka.api_keys if e.api_key in SERVED_APIS and e.api_key not in pending),
        finalized_features=tuple(sorted(finalized, key=lambda f: order.index(f.name))))
    ours = dataclasses.replace(ours, api_keys=tuple(e for e in ours.api_keys if e.api_key not in pending))
    oracle.compare(ApiKey.API_VERSIONS, version, ours, kafka)
