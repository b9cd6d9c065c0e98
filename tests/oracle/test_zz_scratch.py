import trio
from protocol.api_keys import ApiKey
from tests.oracle.test_data import *  # noqa


async def test_scratch(oracle, request):
    version = 12
    name, alias = await topic_with_records(oracle, request, records=1)
    txn = unique(request, "-txn")
    init = await init_producer(oracle, txn)
    producer, epoch = Alias(init["producer_id"]), init["producer_epoch"]
    await oracle.call(ApiKey.ADD_PARTITIONS_TO_TXN, 3, req(
        ApiKey.ADD_PARTITIONS_TO_TXN, v3_and_below_transactional_id=txn, v3_and_below_producer_id=producer,
        v3_and_below_producer_epoch=epoch, v3_and_below_topics=(
            sub(ApiKey.ADD_PARTITIONS_TO_TXN, "AddPartitionsToTxnTopic", name=name, partitions=(0,)),)))
    for side in oracle.sides:
        data = batch([b"t1", b"t2"], producer_id=side.resolve(producer), epoch=epoch, sequence=0, transactional=True)
        await side.client.call(P, 9, produce_body(9, name, None, {0: data}, transactional_id=txn))
    await oracle.call(ApiKey.END_TXN, 3, req(ApiKey.END_TXN, transactional_id=txn, producer_id=producer,
                                             producer_epoch=epoch, committed=False))
    await trio.sleep(1)
    t = (name, alias)
    for off in (0, 1, 3):
        for iso in (0, 1):
            ours, kafka = await oracle.both(F, version, fetch_body(version, {t: {0: off}}, isolation=iso))
            print("offset", off, "isolation", iso)
            print("  ours ", [b["base_offset"] for b in oracle.ours.records(ours.responses[0].partitions[0].records)])
            print("  kafka", [b["base_offset"] for b in oracle.kafka.records(kafka.responses[0].partitions[0].records)])
