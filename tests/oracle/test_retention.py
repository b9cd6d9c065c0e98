"""Time and size retention against Apache Kafka 4.3.1: the active segment goes too once it is
past retention (a new one is rolled at the log end first), and the log then starts there.

Both brokers run their retention check at once and every 200 ms (``log.initial.task.delay.ms``,
``log.retention.check.interval.ms``), so this module starts its own pair."""

import pytest
import trio

from protocol.api_keys import ApiKey
from tests.conftest import ORACLE_SETTINGS
from tests.oracle.steps import batch, connected, create_topic, own_pair, req, sub, unique
from tests.support.differential import Differential

P, LO = ApiKey.PRODUCE, ApiKey.LIST_OFFSETS
RETAINING = {**ORACLE_SETTINGS, "log.initial.task.delay.ms": "0", "log.retention.check.interval.ms": "200"}
LONG_AGO = 86_400_000                              # 1970-01-02: past any retention.ms


@pytest.fixture(scope="module")
def retaining_brokers(tmp_path_factory):
    with own_pair(tmp_path_factory.mktemp("retention-oracle"), RETAINING) as pair:
        yield pair


@pytest.fixture
async def retention_oracle(retaining_brokers):
    async with connected(retaining_brokers) as oracle:
        yield oracle


def produce(name: str, records: bytes):
    return req(P, acks=-1, timeout_ms=30000, topic_data=(sub(P, "TopicProduceData", name=name, partition_data=(
        sub(P, "PartitionProduceData", index=0, records=records),)),))


def offsets(name: str, timestamp: int):
    return req(LO, replica_id=-1, isolation_level=0, timeout_ms=1000, topics=(
        sub(LO, "ListOffsetsTopic", name=name, partitions=(
            sub(LO, "ListOffsetsPartition", partition_index=0, timestamp=timestamp, current_leader_epoch=-1),)),))


async def log_start(oracle: Differential, name: str, at_least: int) -> None:
    """Wait until both brokers' log starts reach ``at_least`` (their checks run every 200 ms)."""
    with trio.fail_after(15):
        for side in oracle.sides:
            while (await side.client.call(LO, 7, offsets(name, -2))).topics[0].partitions[0].offset < at_least:
                await trio.sleep(0.05)


@pytest.mark.parametrize("config", [("retention.ms", "1000"), ("retention.bytes", "0")])
async def test_retention_takes_the_active_segment_too(retention_oracle, request, config):
    name = unique(request)
    await create_topic(retention_oracle, name, configs=(config,))
    await retention_oracle.call(P, 9, produce(name, batch([b"a", b"b", b"c"], timestamp=LONG_AGO)),
                                what="three records in the active segment")
    await log_start(retention_oracle, name, 3)
    for what, ts in (("earliest", -2), ("latest", -1), ("max timestamp", -3)):
        await retention_oracle.call(LO, 9, offsets(name, ts), what=f"{what}, once retention took them")
    await retention_oracle.call(P, 9, produce(name, batch([b"d"], timestamp=LONG_AGO)),
                                what="a record after it, in the new active segment")
