"""The transaction protocol's pieces in protocol/: transaction markers (control batches), the
``__transaction_state`` records, and the transaction APIs' declarations.

The seven transaction APIs are also held against Kafka's JSON and round-tripped at every
version by the generic tests (test_declarations.py, test_codec_oracle.py); this file adds
bytes worked out by hand from Kafka's layouts, which need neither our codec nor kafka-python.
"""

from __future__ import annotations

import struct

import pytest
from kafka.record._crc32c import crc as kafka_python_crc32c
from kafka.record.default_records import DefaultRecordBatch

from protocol.api_keys import ApiKey
from protocol.control_records import (ABORT, COMMIT, control_batch, control_key, control_type,
                                      marker_coordinator_epoch, marker_value, parse_control)
from protocol.exceptions import DecodeError, EncodeError
from protocol.messages import REQUESTS, RESPONSES
from protocol.messages.transaction_log_records import TRANSACTION_RECORDS
from protocol.payloads import decode_payload, encode_payload
from protocol.record_batch import Record, build_batch
from protocol.records import BatchHeader, read_batches, with_base_offset
from tests.unit.protocol.test_declarations import diff, kafka_rows, our_rows

TS = 1_700_000_000_123


# --- control batches ----------------------------------------------------------------------

def kafka_marker(producer_id: int, producer_epoch: int, kind: int, coordinator_epoch: int,
                 timestamp_ms: int) -> bytes:
    """A marker batch laid out field by field as Kafka's log holds one (base offset 0, leader
    epoch 0), with kafka-python's own pure-Python CRC-32C."""
    record_body = (b"\x00"                                   # record attributes
                   + b"\x00" + b"\x00"                       # timestamp and offset deltas
                   + b"\x08" + struct.pack(">hh", 0, kind)  # key: 4 bytes (zigzag 8)
                   + b"\x0c" + struct.pack(">hi", 0, coordinator_epoch)   # value: 6 bytes
                   + b"\x00")                                # no headers
    record = bytes([len(record_body) * 2]) + record_body
    after_crc = struct.pack(">hiqqqhii", 0x30, 0, timestamp_ms, timestamp_ms, producer_id,
                            producer_epoch, -1, 1) + record
    return struct.pack(">qiibI", 0, len(after_crc) + 9, 0, 2,
                       kafka_python_crc32c(after_crc)) + after_crc


def test_commit_marker_bytes_as_kafka_lays_them_out():
    batch = control_batch(4242, 7, True, 3, TS)
    assert batch == kafka_marker(4242, 7, COMMIT, 3, TS)
    assert batch.hex() == (
        "0000000000000000" "00000042" "00000000" "02" "e84a0204"   # offset, length, epoch, magic, crc
        "0030" "00000000" "0000018bcfe5687b" "0000018bcfe5687b"    # attributes, delta, timestamps
        "0000000000001092" "0007" "ffffffff" "00000001"            # producer, epoch, sequence, count
        "20" "000000" "08" "00000001" "0c" "000000000003" "00")     # the one record


@pytest.mark.parametrize("commit", [True, False])
@pytest.mark.parametrize("producer_id, producer_epoch, coordinator_epoch",
                         [(0, 0, 0), (4242, 7, 3), (2**63 - 1, 32767, 2**31 - 1), (17, 1, -1)])
def test_marker_batch_header_crc_and_round_trip(commit, producer_id, producer_epoch,
                                                 coordinator_epoch):
    batch = control_batch(producer_id, producer_epoch, commit, coordinator_epoch, TS)
    assert batch == kafka_marker(producer_id, producer_epoch, COMMIT if commit else ABORT,
                                 coordinator_epoch, TS)
    [h] = read_batches(batch, verify_crc=True)
    assert (h.base_offset, h.partition_leader_epoch, h.magic, h.attributes) == (0, 0, 2, 0x30)
    assert h.is_transactional and h.is_control and h.compression == 0
    assert (h.last_offset_delta, h.record_count, h.base_sequence) == (0, 1, -1)
    assert (h.producer_id, h.producer_epoch) == (producer_id, producer_epoch)
    assert (h.base_timestamp, h.max_timestamp) == (TS, TS)
    assert h.size == len(batch) == 78
    assert parse_control(batch) == (commit, coordinator_epoch)


def test_the_log_renumbers_a_marker_without_breaking_its_crc():
    batch = with_base_offset(control_batch(9, 2, False, 5, TS), 12345)
    [h] = read_batches(batch, verify_crc=True)
    assert h.base_offset == 12345
    assert parse_control(batch) == (False, 5)


@pytest.mark.parametrize("commit", [True, False])
def test_kafka_python_reads_our_marker(commit):
    kb = DefaultRecordBatch(control_batch(4242, 7, commit, 3, TS))
    assert kb.validate_crc()
    assert kb.is_control_batch and kb.is_transactional
    assert (kb.producer_id, kb.producer_epoch, kb.base_sequence) == (4242, 7, -1)
    [record] = list(kb)
    assert (record.version, record.commit, record.abort) == (0, commit, not commit)
    assert (record.offset, record.timestamp, record.headers) == (0, TS, [])
    assert record.value == b"\x00\x00\x00\x00\x00\x03"


def test_key_and_value_helpers():
    assert control_key(True) == b"\x00\x00\x00\x01" and control_key(False) == b"\x00\x00\x00\x00"
    assert control_type(control_key(True)) == COMMIT and control_type(control_key(False)) == ABORT
    assert marker_value(3) == b"\x00\x00\x00\x00\x00\x03"
    assert marker_coordinator_epoch(marker_value(-1)) == -1
    # A later version is read as version 0 (it may only append fields), as Kafka reads it.
    assert control_type(struct.pack(">hh", 1, COMMIT) + b"more") == COMMIT
    assert marker_coordinator_epoch(struct.pack(">hi", 2, 9) + b"more") == 9


@pytest.mark.parametrize("key", [None, b"", b"\x00\x00\x00", struct.pack(">hh", -1, COMMIT)])
def test_bad_control_keys_are_refused(key):
    with pytest.raises(DecodeError):
        control_type(key)


@pytest.mark.parametrize("value", [None, b"\x00\x00\x00\x00\x00", struct.pack(">hi", -1, 3)])
def test_bad_marker_values_are_refused(value):
    with pytest.raises(DecodeError):
        marker_coordinator_epoch(value)


def _batch(attributes: int, records: list[Record]) -> bytes:
    like = BatchHeader(0, 0, 0, 2, 0, attributes, 0, TS, TS, 4242, 7, -1, len(records), 0)
    return build_batch(like, records, base_offset=0)


@pytest.mark.parametrize("attributes, records", [
    # a transactional data batch is not a marker
    (0x10, [Record(0, TS, control_key(True), marker_value(0))]),
    # a control batch emptied by compaction ends no transaction (Kafka skips it too)
    (0x30, []),
    # another control type (2: Kafka's LEADER_CHANGE) is not an end-transaction marker
    (0x30, [Record(0, TS, struct.pack(">hh", 0, 2), marker_value(0))]),
    # a marker value too short to hold the coordinator epoch
    (0x30, [Record(0, TS, control_key(True), b"\x00\x00")]),
    (0x30, [Record(0, TS, None, marker_value(0))]),
], ids=["data-batch", "empty", "other-type", "short-value", "no-key"])
def test_parse_control_refuses_what_is_not_a_marker(attributes, records):
    batch = _batch(attributes, records)
    read_batches(batch, verify_crc=True)
    with pytest.raises(DecodeError):
        parse_control(batch)


# --- the __transaction_state records ------------------------------------------------------

# Kafka's TransactionLogKey.json and TransactionLogValue.json (transaction-coordinator/src/main/
# resources/common/message/ in apache/kafka, 4.x), fields only: kafka-python does not ship them.
KAFKA_KEY = {"validVersions": "0", "flexibleVersions": "none", "fields": [
    {"name": "TransactionalId", "type": "string", "versions": "0"},
]}
KAFKA_VALUE = {"validVersions": "0-1", "flexibleVersions": "1+", "fields": [
    {"name": "ProducerId", "type": "int64", "versions": "0+"},
    {"name": "PreviousProducerId", "type": "int64", "versions": "1+", "taggedVersions": "1+",
     "tag": 0, "default": -1},
    {"name": "NextProducerId", "type": "int64", "versions": "1+", "taggedVersions": "1+",
     "tag": 1, "default": -1},
    {"name": "ProducerEpoch", "type": "int16", "versions": "0+"},
    {"name": "TransactionTimeoutMs", "type": "int32", "versions": "0+"},
    {"name": "TransactionStatus", "type": "int8", "versions": "0+"},
    {"name": "TransactionPartitions", "type": "[]PartitionsSchema", "versions": "0+",
     "nullableVersions": "0+", "fields": [
         {"name": "Topic", "type": "string", "versions": "0+"},
         {"name": "PartitionIds", "type": "[]int32", "versions": "0+"},
     ]},
    {"name": "TransactionLastUpdateTimestampMs", "type": "int64", "versions": "0+"},
    {"name": "TransactionStartTimestampMs", "type": "int64", "versions": "0+"},
    {"name": "ClientTransactionVersion", "type": "int16", "versions": "1+", "taggedVersions": "1+",
     "tag": 2, "default": 0},
]}

KEY, VALUE = TRANSACTION_RECORDS.key, TRANSACTION_RECORDS.value
Value = VALUE.cls


@pytest.mark.parametrize("msg, kafka", [(KEY, KAFKA_KEY), (VALUE, KAFKA_VALUE)],
                         ids=["key", "value"])
def test_transaction_log_records_match_kafka(msg, kafka):
    assert (msg.valid_spec, msg.flexible_spec) == (kafka["validVersions"], kafka["flexibleVersions"])
    problems = []
    for v in range(msg.min_version, msg.max_version + 1):
        problems += diff(kafka_rows(kafka["fields"], v, {}), our_rows(msg, msg.cls, msg.fields, v),
                         f"{msg.name} v{v}")
    assert not problems, "\n".join(problems)


def _value(**over):
    fields = dict(producer_id=1000, producer_epoch=2, transaction_timeout_ms=60000,
                  transaction_status=1,
                  transaction_partitions=(Value.PartitionsSchema(topic="t", partition_ids=(0, 3)),),
                  transaction_last_update_timestamp_ms=1_700_000_000_000,
                  transaction_start_timestamp_ms=1_699_999_999_000)
    return Value(**{**fields, **over})


_V0_BODY = (struct.pack(">qhib", 1000, 2, 60000, 1)
            + struct.pack(">i", 1) + b"\x00\x01t" + struct.pack(">iii", 2, 0, 3)
            + struct.pack(">qq", 1_700_000_000_000, 1_699_999_999_000))


def test_transaction_log_key_bytes():
    key = KEY.cls(transactional_id="my-txn")
    data = encode_payload(KEY, 0, key)
    assert data == b"\x00\x00" + b"\x00\x06my-txn"
    assert decode_payload(KEY, data) == (0, key)


def test_transaction_log_value_v0_bytes():
    data = encode_payload(VALUE, 0, _value())
    assert data == b"\x00\x00" + _V0_BODY
    assert decode_payload(VALUE, data) == (0, _value())
    # Kafka writes null partitions for an Empty id: INT32 -1.
    empty = _value(transaction_status=0, transaction_partitions=None)
    assert encode_payload(VALUE, 0, empty)[2 + 15:2 + 19] == b"\xff\xff\xff\xff"
    assert decode_payload(VALUE, encode_payload(VALUE, 0, empty)) == (0, empty)


def test_transaction_log_value_v1_bytes_with_tagged_fields():
    value = _value(previous_producer_id=999, client_transaction_version=2)
    data = encode_payload(VALUE, 1, value)
    assert data == (b"\x00\x01" + struct.pack(">qhib", 1000, 2, 60000, 1)
                    + b"\x02" + b"\x02t" + b"\x03" + struct.pack(">ii", 0, 3) + b"\x00"
                    + struct.pack(">qq", 1_700_000_000_000, 1_699_999_999_000)
                    + b"\x02"                                    # two tagged fields, by tag:
                    + b"\x00\x08" + struct.pack(">q", 999)       # 0 PreviousProducerId
                    + b"\x02\x02" + struct.pack(">h", 2))        # 2 ClientTransactionVersion
    assert decode_payload(VALUE, data) == (1, value)
    # Defaults are not written; null partitions are a compact null.
    plain = _value(transaction_partitions=None)
    assert encode_payload(VALUE, 1, plain).endswith(
        b"\x00" + struct.pack(">qq", 1_700_000_000_000, 1_699_999_999_000) + b"\x00")


def test_a_v0_value_cannot_carry_the_v1_tagged_fields():
    for field in ("previous_producer_id", "next_producer_id", "client_transaction_version"):
        with pytest.raises(EncodeError):
            encode_payload(VALUE, 0, _value(**{field: 5}))


@pytest.mark.parametrize("version", [0, 1])
def test_transaction_log_value_round_trips(version):
    values = [_value(), _value(transaction_partitions=None), _value(transaction_partitions=())]
    if version >= 1:
        values.append(_value(previous_producer_id=1, next_producer_id=2, client_transaction_version=2))
    codec = VALUE.codec(version)
    for value in values:
        data = codec.encode(value)
        assert codec.decode(data) == value == codec.decode_interpreted(data)
        assert codec.encode_interpreted(value) == data


# --- the transaction APIs -----------------------------------------------------------------

#: key -> (versions we declare, Kafka 4.x's validVersions, flexible versions). Where ours are
#: fewer, the cap is documented in the module and in test_declarations.CAPPED.
TRANSACTION_APIS = {
    ApiKey.ADD_PARTITIONS_TO_TXN: ("0-5", "0-5", "3+"),
    ApiKey.ADD_OFFSETS_TO_TXN: ("0-4", "0-4", "3+"),
    ApiKey.END_TXN: ("0-5", "0-5", "3+"),
    ApiKey.TXN_OFFSET_COMMIT: ("0-5", "0-5", "3+"),
    ApiKey.DESCRIBE_PRODUCERS: ("0", "0", "0+"),
    ApiKey.DESCRIBE_TRANSACTIONS: ("0", "0", "0+"),
    ApiKey.LIST_TRANSACTIONS: ("0-2", "0-2", "0+"),
}


@pytest.mark.parametrize("key", list(TRANSACTION_APIS), ids=lambda k: k.name)
def test_transaction_api_versions(key):
    ours, _, flexible = TRANSACTION_APIS[key]
    for msg in (REQUESTS[key], RESPONSES[key]):
        assert (msg.valid_spec, msg.flexible_spec) == (ours, flexible)


def _both(msg, version, value, expected: bytes):
    codec = msg.codec(version)
    assert codec.encode(value) == expected == codec.encode_interpreted(value)
    assert codec.decode(expected) == value == codec.decode_interpreted(expected)


def test_end_txn_request_bytes():
    req = REQUESTS[ApiKey.END_TXN]
    value = req.cls(transactional_id="t", producer_id=5, producer_epoch=1, committed=True)
    fixed = struct.pack(">qh?", 5, 1, True)
    _both(req, 0, value, b"\x00\x01t" + fixed)
    _both(req, 3, value, b"\x02t" + fixed + b"\x00")


def test_add_partitions_to_txn_v3_request_bytes():
    req = REQUESTS[ApiKey.ADD_PARTITIONS_TO_TXN]
    topic = req.cls.AddPartitionsToTxnTopic(name="a", partitions=(0, 1))
    value = req.cls(v3_and_below_transactional_id="t", v3_and_below_producer_id=5,
                    v3_and_below_producer_epoch=1, v3_and_below_topics=(topic,))
    _both(req, 3, value, b"\x02t" + struct.pack(">qh", 5, 1)
          + b"\x02" + b"\x02a" + b"\x03" + struct.pack(">ii", 0, 1) + b"\x00" + b"\x00")


def test_txn_offset_commit_v3_request_bytes():
    req = REQUESTS[ApiKey.TXN_OFFSET_COMMIT]
    topic_cls = req.cls.TxnOffsetCommitRequestTopic
    part = topic_cls.TxnOffsetCommitRequestPartition(partition_index=2, committed_offset=10,
                                                     committed_leader_epoch=-1,
                                                     committed_metadata=None)
    topic = topic_cls(name="a", partitions=(part,))
    value = req.cls(transactional_id="t", group_id="g", producer_id=5, producer_epoch=1,
                    generation_id=3, member_id="m", group_instance_id=None, topics=(topic,))
    _both(req, 3, value, b"\x02t" + b"\x02g" + struct.pack(">qhi", 5, 1, 3) + b"\x02m" + b"\x00"
          + b"\x02" + b"\x02a" + b"\x02" + struct.pack(">iqi", 2, 10, -1) + b"\x00\x00" + b"\x00"
          + b"\x00")


def test_list_transactions_v1_request_bytes():
    req = REQUESTS[ApiKey.LIST_TRANSACTIONS]
    value = req.cls(state_filters=("Ongoing",), producer_id_filters=(), duration_filter=-1)
    _both(req, 1, value, b"\x02" + b"\x08Ongoing" + b"\x01" + struct.pack(">q", -1) + b"\x00")
    _both(req, 0, value, b"\x02" + b"\x08Ongoing" + b"\x01" + b"\x00")
