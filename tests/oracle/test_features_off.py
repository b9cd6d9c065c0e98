"""An Apache Kafka 4.3.1 formatted with share.version, streams.version and transaction.version
0, and groupbroker told the same levels (groupbroker.feature.*): both advertise every API all
the same (ApiVersions compared whole: the ranges never depend on the features), and answer the
share-group (KIP-932) and streams-group (KIP-1071) APIs with UNSUPPORTED_VERSION before any
other check."""

import dataclasses
import uuid

import pytest

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from broker.dispatch.served import SERVED_APIS
from tests.conftest import ORACLE_SETTINGS
from tests.oracle.steps import connected, own_pair, req, sub, versions

FEATURES = {"transaction.version": 0, "share.version": 0, "streams.version": 0}
TOPIC_ID = uuid.UUID("6f1c2d3e-4a5b-4c6d-8e7f-901a2b3c4d5e")


@pytest.fixture(scope="module")
def features_off(tmp_path_factory):
    with own_pair(tmp_path_factory.mktemp("features-off"), ORACLE_SETTINGS, FEATURES) as pair:
        yield pair


@pytest.fixture
async def oracle(features_off):
    async with connected(features_off) as differential:
        yield differential


@pytest.mark.parametrize("version", [3, 4])
async def test_api_versions_whole(oracle, version):
    body = oracle.ours.client.session.api_versions_request(version)
    ours, kafka = await oracle.both(ApiKey.API_VERSIONS, version, body)

    def shared(answer):
        """The APIs groupbroker serves (Kafka serves more)."""
        return dataclasses.replace(answer, api_keys=tuple(k for k in answer.api_keys if k.api_key in SERVED_APIS))
    assert {k.api_key for k in ours.api_keys} == SERVED_APIS
    oracle.compare(ApiKey.API_VERSIONS, version, shared(ours), shared(kafka),
                   what="share and streams groups advertised, their features not finalized")


def _bodies():
    share_topic = lambda api, struct: sub(api, struct, topic_id=TOPIC_ID, partitions=(
        sub(api, struct.replace("Topic", "Partition"), partition_index=0),))
    return {
        ApiKey.SHARE_GROUP_HEARTBEAT: req(ApiKey.SHARE_GROUP_HEARTBEAT, group_id="g", member_id="m", member_epoch=0,
                                          subscribed_topic_names=("t",)),
        ApiKey.SHARE_GROUP_DESCRIBE: req(ApiKey.SHARE_GROUP_DESCRIBE, group_ids=("g", "h")),
        ApiKey.SHARE_FETCH: req(ApiKey.SHARE_FETCH, group_id="g", member_id="m", share_session_epoch=0,
                                max_wait_ms=0, min_bytes=1, max_records=10, batch_size=10,
                                topics=(share_topic(ApiKey.SHARE_FETCH, "FetchTopic"),)),
        ApiKey.SHARE_ACKNOWLEDGE: req(ApiKey.SHARE_ACKNOWLEDGE, group_id="g", member_id="m", share_session_epoch=1,
                                      topics=(share_topic(ApiKey.SHARE_ACKNOWLEDGE, "AcknowledgeTopic"),)),
        ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: req(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, groups=(
            sub(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, "DescribeShareGroupOffsetsRequestGroup", group_id="g",
                topics=None),
            sub(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, "DescribeShareGroupOffsetsRequestGroup", group_id="h",
                topics=(sub(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, "DescribeShareGroupOffsetsRequestTopic",
                            topic_name="t", partitions=(0,)),)))),
        ApiKey.ALTER_SHARE_GROUP_OFFSETS: req(ApiKey.ALTER_SHARE_GROUP_OFFSETS, group_id="g", topics=(
            sub(ApiKey.ALTER_SHARE_GROUP_OFFSETS, "AlterShareGroupOffsetsRequestTopic", topic_name="t", partitions=(
                sub(ApiKey.ALTER_SHARE_GROUP_OFFSETS, "AlterShareGroupOffsetsRequestPartition", partition_index=0,
                    start_offset=0),)),)),
        ApiKey.DELETE_SHARE_GROUP_OFFSETS: req(ApiKey.DELETE_SHARE_GROUP_OFFSETS, group_id="g", topics=(
            sub(ApiKey.DELETE_SHARE_GROUP_OFFSETS, "DeleteShareGroupOffsetsRequestTopic", topic_name="t"),)),
        ApiKey.STREAMS_GROUP_HEARTBEAT: req(ApiKey.STREAMS_GROUP_HEARTBEAT, group_id="g", member_id="m",
                                            member_epoch=0, endpoint_information_epoch=0),
        ApiKey.STREAMS_GROUP_DESCRIBE: req(ApiKey.STREAMS_GROUP_DESCRIBE, group_ids=("g",)),
    }


@pytest.mark.parametrize("api, version", [(api, v) for api in _bodies() for v in versions(api)],
                         ids=lambda x: x.name if isinstance(x, ApiKey) else str(x))
async def test_answered_unsupported_version(oracle, api, version):
    answer = await oracle.call(api, version, _bodies()[api])
    assert str(int(ErrorCode.UNSUPPORTED_VERSION)) in str(answer), answer
