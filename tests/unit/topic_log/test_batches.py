"""Record batches built by kafka-python's own producer code, shared by the topics tests.

The tests here check the premise the partition log rests on: a client's batch, base offset
rewritten by the broker, is still a batch the client's consumer reads without complaint.
"""

from __future__ import annotations

from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from protocol.records import read_batches, with_base_offset


def batch(values, *, timestamp=1_000, producer_id=-1, epoch=-1, sequence=-1,
          compression=0) -> bytes:
    """One v2 batch holding ``values`` (bytes), record i stamped ``timestamp + i``."""
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=compression, is_transactional=False, producer_id=producer_id,
        producer_epoch=epoch, base_sequence=sequence, batch_size=1 << 20)
    for i, value in enumerate(values):
        builder.append(i, timestamp=timestamp + i, key=None, value=value, headers=[])
    return bytes(builder.build())


def values_of(data: bytes) -> list[tuple[int, bytes]]:
    """(offset, value) of every record, decoded (and CRC-checked) by kafka-python."""
    records = MemoryRecords(data)
    out = []
    while (b := records.next_batch()) is not None:
        assert b.validate_crc()
        out.extend((r.offset, r.value) for r in b)
    return out


def test_rewritten_batch_reads_back_in_kafka_python():
    data = batch([b"a", b"b", b"c"], timestamp=5)
    (header,) = read_batches(data)
    assert (header.base_offset, header.last_offset_delta, header.max_timestamp) == (0, 2, 7)
    assert values_of(with_base_offset(data, 40)) == [(40, b"a"), (41, b"b"), (42, b"c")]


def test_gzip_batch_is_stored_as_one_batch():
    data = batch([b"x" * 100] * 10, compression=1)
    (header,) = read_batches(data)
    assert header.compression == 1 and header.last_offset_delta == 9
    assert [v for _, v in values_of(data)] == [b"x" * 100] * 10
