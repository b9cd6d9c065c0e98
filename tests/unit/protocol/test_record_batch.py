"""Records inside v2 batches: our decoder and builder against kafka-python 3.0.12's, and round
trips through every compression codec."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from protocol.exceptions import DecodeError
from protocol.record_batch import GZIP, LZ4, NONE, SNAPPY, ZSTD, build_batch, records_of
from protocol.records import read_batches

_records = st.lists(st.tuples(st.integers(0, 50), st.integers(-1000, 10**6),
                              st.one_of(st.none(), st.binary(max_size=20)),
                              st.one_of(st.none(), st.binary(max_size=200)),
                              st.lists(st.tuples(st.text(max_size=5), st.one_of(st.none(), st.binary(max_size=5))),
                                       max_size=2)),
                    min_size=1, max_size=8)


def kafka_python_batch(rows, compression: int, base_offset: int = 0) -> bytes:
    builder = DefaultRecordBatchBuilder(2, compression, False, 7, 1, 3, 1 << 20)
    offset = base_offset
    for gap, ts, key, value, headers in rows:
        builder.append(offset, 1_700_000_000_000 + ts, key, value, headers)
        offset += gap + 1
    return bytes(builder.build())


@pytest.mark.parametrize("compression", [NONE, GZIP])
@given(rows=_records)
@settings(max_examples=60, deadline=None)
def test_records_of_reads_kafka_pythons_batches(compression, rows):
    header, records = records_of(kafka_python_batch(rows, compression))
    offsets = []
    offset = 0
    for gap, *_ in rows:
        offsets.append(offset)
        offset += gap + 1
    assert [r.offset for r in records] == offsets
    assert [r.timestamp for r in records] == [1_700_000_000_000 + ts for _, ts, *_ in rows]
    assert [(r.key, r.value) for r in records] == [(k, v) for _, _, k, v, _ in rows]
    assert [list(r.headers) for r in records] == [[(n, v) for n, v in h] for *_, h in rows]
    assert header.producer_id == 7 and header.compression in (NONE, compression)   # it skips a codec that does not help


@pytest.mark.parametrize("compression", [NONE, GZIP, SNAPPY, LZ4, ZSTD])
@given(rows=_records, keep=st.data())
@settings(max_examples=40, deadline=None)
def test_a_rebuilt_batch_keeps_offsets_timestamps_and_compression(compression, rows, keep):
    original = kafka_python_batch(rows, NONE, base_offset=100)
    header, records = records_of(original)
    header = header.__class__(**{**{f: getattr(header, f) for f in header.__dataclass_fields__},
                                 "attributes": header.attributes | compression})
    survivors = [r for r in records if keep.draw(st.booleans())] or records[-1:]
    rebuilt = build_batch(header, survivors)
    assert read_batches(rebuilt)[0].compression == compression          # the CRC checks out
    again, decoded = records_of(rebuilt)
    assert decoded == survivors
    assert (again.producer_id, again.producer_epoch, again.base_sequence) == (7, 1, 3)
    if compression in (NONE, GZIP):                                     # and kafka-python agrees
        theirs = list(DefaultRecordBatch(rebuilt))
        assert [(r.offset, r.timestamp, r.key, r.value) for r in theirs] == \
            [(r.offset, r.timestamp, r.key, r.value) for r in survivors]


def test_log_append_time_batches_give_every_record_the_batch_time():
    header, records = records_of(kafka_python_batch([(0, 5, b"k", b"v", [])] * 3, NONE))
    stamped = header.__class__(**{**{f: getattr(header, f) for f in header.__dataclass_fields__},
                                  "attributes": header.attributes | 0x08, "max_timestamp": 42})
    _, again = records_of(build_batch(stamped, records))
    assert {r.timestamp for r in again} == {42}


def test_damaged_compressed_data_is_a_decode_error():
    batch = bytearray(kafka_python_batch([(0, 1, b"k", b"v" * 100, [])], GZIP))
    batch[-10] ^= 0xFF
    with pytest.raises(DecodeError):
        records_of(bytes(batch))


def test_snappy_is_read_raw_as_librdkafka_writes_it_and_xerial_framed_as_java_does():
    import struct

    import cramjam
    from crc32c import crc32c
    plain = kafka_python_batch([(0, 1, b"k", b"value" * 50, [])], NONE)
    header, records = records_of(plain)
    snappy = header.__class__(**{**{f: getattr(header, f) for f in header.__dataclass_fields__},
                                 "attributes": header.attributes | SNAPPY})
    xerial = build_batch(snappy, records)
    assert xerial[61:69] == b"\x82SNAPPY\x00"
    assert records_of(xerial)[1] == records
    after_crc = struct.pack(">h", SNAPPY) + plain[23:61] + bytes(cramjam.snappy.compress_raw(plain[61:]))
    raw = struct.pack(">qiib", 0, len(after_crc) + 9, 0, 2) + struct.pack(">I", crc32c(after_crc)) + after_crc
    assert read_batches(raw)[0].compression == SNAPPY
    assert records_of(raw)[1] == records
