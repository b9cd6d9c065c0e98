"""Transactions from the outside: ``groupbroker transactions`` (kafka-transactions.sh's list
and describe), the transaction faults, and the request recording with producer ids."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.integration.test_transactions_crash import SETTINGS, admin
from tests.interop.test_transactions_confluent import read_all, transactional
from tests.support.confluent import create_topics
from tests.support.processes import import_client

ck = import_client("confluent_kafka")


def transactions_cli(broker, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "broker", "transactions", "--bootstrap-server",
                           broker.bootstrap, *args], capture_output=True, text=True, timeout=60)


def test_list_and_describe_as_kafka_transactions_sh(start_broker):
    broker = start_broker(SETTINGS)
    create_topics(broker.bootstrap, ("cli-out", 2))
    producer = transactional(broker.bootstrap, "cli-tx")
    producer.begin_transaction()
    producer.produce("cli-out", value=b"x", partition=1)
    producer.flush(15)
    listed = transactions_cli(broker, "list")
    assert listed.returncode == 0, listed.stderr
    header, row = listed.stdout.splitlines()
    assert header.split() == ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
    assert row.split()[0] == "cli-tx" and row.split()[1] == "1" and row.split()[3] == "Ongoing"
    assert header.endswith("\t") and "\t" in row          # Kafka's padded, tab-ended columns
    described = transactions_cli(broker, "describe", "--transactional-id", "cli-tx")
    assert described.returncode == 0, described.stderr
    fields = dict(zip(*(line.split("\t")[:-1] for line in described.stdout.splitlines())))
    fields = {k.strip(): v.strip() for k, v in fields.items()}
    assert fields["TransactionState"] == "Ongoing" and fields["TopicPartitions"] == "cli-out-1"
    assert fields["ProducerEpoch"] == "0" and int(fields["TransactionDurationMs"]) >= 0
    producer.commit_transaction(15)
    done = transactions_cli(broker, "describe", "--transactional-id", "cli-tx")
    assert "CompleteCommit" in done.stdout
    missing = transactions_cli(broker, "describe", "--transactional-id", "nobody")
    assert missing.returncode == 1 and missing.stderr.startswith(
        "Failed to describe transaction state of transactional-id `nobody`: DescribeTransactions "
        "request for transactionalId `nobody` failed because the ID could not be found.")


@pytest.mark.parametrize("fault", ["fence-transactional-id", "abort-transaction"])
def test_a_fenced_or_aborted_producer_cannot_commit(start_broker, fault):
    broker = start_broker(SETTINGS)
    create_topics(broker.bootstrap, ("fault-out", 1))
    producer = transactional(broker.bootstrap, "fault-tx")
    producer.begin_transaction()
    producer.produce("fault-out", value=b"doomed")
    producer.flush(15)
    client = admin(broker)
    assert "fenced" in client.call(fault, {"transactional_id": "fault-tx"})
    with pytest.raises(ck.KafkaException) as failed:
        producer.commit_transaction(15)
    assert failed.value.args[0].fatal()
    assert read_all(broker.bootstrap, "fault-out", 1, "read_committed", seconds=2) == []
    with pytest.raises(Exception, match="not known"):
        client.call(fault, {"transactional_id": "nobody"})
    client.close()


def test_failed_end_txn_is_retried_and_recorded_with_its_producer(start_broker):
    broker = start_broker(SETTINGS)
    create_topics(broker.bootstrap, ("rec-out", 1))
    client = admin(broker)
    client.call("record", {"on": True})
    producer = transactional(broker.bootstrap, "rec-tx")
    client.call("fail", {"api": "EndTxn", "error": "CONCURRENT_TRANSACTIONS", "count": 1})
    producer.begin_transaction()
    producer.produce("rec-out", value=b"once")
    producer.commit_transaction(15)                      # retried past the injected error
    assert read_all(broker.bootstrap, "rec-out", 1, "read_committed", expect=1) == [b"once"]
    recorded = client.call("recorded", {})
    init = next(r for r in recorded if r["api"] == "InitProducerId")
    assert init["transactional_id"] == "rec-tx" and init["producer_id"] >= 0 and init["producer_epoch"] == 0
    ends = [r for r in recorded if r["api"] == "EndTxn"]
    assert [e["error"] for e in ends] == ["CONCURRENT_TRANSACTIONS", "NONE"]
    assert {(e["producer_id"], e["producer_epoch"]) for e in ends} == {(init["producer_id"], 0)}
    client.close()


def test_describe_producers_shows_the_open_transaction(start_broker):
    from kafka_client.blocking import BlockingClient
    from protocol.api_keys import ApiKey
    from protocol.messages import REQUESTS
    broker = start_broker(SETTINGS)
    create_topics(broker.bootstrap, ("dp-out", 1))
    producer = transactional(broker.bootstrap, "dp-tx")
    producer.begin_transaction()
    for i in range(3):
        producer.produce("dp-out", value=b"%d" % i)
    producer.flush(15)
    request = REQUESTS[ApiKey.DESCRIBE_PRODUCERS].cls
    client = BlockingClient("127.0.0.1", broker.port, timeout=10)
    try:
        def describe():
            answer = client.call(ApiKey.DESCRIBE_PRODUCERS, 0, request(topics=(
                request.TopicRequest(name="dp-out", partition_indexes=(0, 7)),
                request.TopicRequest(name="nope", partition_indexes=(0,)))))
            return answer.topics
        (out, nope) = describe()
        (p0, p7) = out.partitions
        [state] = p0.active_producers
        assert (p7.error_code, nope.partitions[0].error_code) == (3, 3)
        assert state.producer_epoch == 0 and state.current_txn_start_offset == 0 and state.last_sequence >= 0
        producer.commit_transaction(15)
        [state] = describe()[0].partitions[0].active_producers
        assert state.current_txn_start_offset == -1 and state.coordinator_epoch == 0
    finally:
        client.close()


def test_wire_rules_verification_and_old_versions(start_broker):
    """A transactional batch for a partition not added to the transaction is refused
    (INVALID_TXN_STATE, Kafka's produce-side verification); a fenced producer is told
    INVALID_PRODUCER_EPOCH by versions older than PRODUCER_FENCED."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    from kafka_client.blocking import BlockingClient
    from protocol.api_keys import ApiKey
    from protocol.messages import REQUESTS
    broker = start_broker(SETTINGS)
    create_topics(broker.bootstrap, ("wire-out", 2))
    R = {k: REQUESTS[k].cls for k in (ApiKey.INIT_PRODUCER_ID, ApiKey.ADD_PARTITIONS_TO_TXN,
                                       ApiKey.PRODUCE, ApiKey.END_TXN)}
    client = BlockingClient("127.0.0.1", broker.port, timeout=10)
    try:
        init = client.call(ApiKey.INIT_PRODUCER_ID, 4, R[ApiKey.INIT_PRODUCER_ID](
            transactional_id="wire-tx", transaction_timeout_ms=60000))
        pid, epoch = init.producer_id, init.producer_epoch

        def produce(partition: int) -> int:
            builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=True,
                                                producer_id=pid, producer_epoch=epoch, base_sequence=0,
                                                batch_size=1 << 16)
            builder.append(0, timestamp=1, key=None, value=b"x", headers=[])
            req = R[ApiKey.PRODUCE]
            tcls = req.TopicProduceData
            answer = client.call(ApiKey.PRODUCE, 9, req(transactional_id="wire-tx", acks=-1, timeout_ms=5000,
                                 topic_data=(tcls(name="wire-out", partition_data=(
                                     tcls.PartitionProduceData(index=partition, records=bytes(builder.build())),)),)))
            return answer.responses[0].partition_responses[0].error_code

        assert produce(0) == 48                                       # INVALID_TXN_STATE
        add = R[ApiKey.ADD_PARTITIONS_TO_TXN]
        added = client.call(ApiKey.ADD_PARTITIONS_TO_TXN, 3, add(
            v3_and_below_transactional_id="wire-tx", v3_and_below_producer_id=pid,
            v3_and_below_producer_epoch=epoch, v3_and_below_topics=(
                add.AddPartitionsToTxnTopic(name="wire-out", partitions=(0, 9)),)))
        assert {p.partition_index: p.partition_error_code
                for p in added.results_by_topic_v3_and_below[0].results_by_partition} == {0: 55, 9: 3}
        end = R[ApiKey.END_TXN]
        for version, error in ((1, 47), (2, 90)):                    # INVALID_PRODUCER_EPOCH, PRODUCER_FENCED
            answer = client.call(ApiKey.END_TXN, version, end(transactional_id="wire-tx", producer_id=pid,
                                                              producer_epoch=epoch + 5, committed=True))
            assert answer.error_code == error
    finally:
        client.close()
