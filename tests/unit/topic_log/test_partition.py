"""PartitionLog on real files: offsets, reads, segments, corruption, recovery, retention."""

from __future__ import annotations

import os

import pytest

from topic_log import (CorruptRecords, InvalidRecord, MessageTooLarge, OffsetOutOfRange,
                       PartitionLog, TimestampOffset, UnknownTopicOrPartition)
from protocol.errors import ErrorCode
from protocol.records import read_batches
from tests.unit.topic_log.test_batches import batch, values_of


def segments(directory) -> list[str]:
    return sorted(n for n in os.listdir(directory) if n.endswith(".log"))


def test_offsets_are_assigned_consecutively_across_appends(tmp_path):
    plog = PartitionLog(tmp_path / "t-0")
    assert plog.append(batch([b"a", b"b", b"c"]), 10) == (0, 2, -1)
    assert plog.append(batch([b"d"]), 10) == (3, 3, -1)
    two_batches = batch([b"e"]) + batch([b"f", b"g"])
    assert plog.append(two_batches, 10) == (4, 6, -1)
    assert (plog.log_start_offset, plog.high_watermark) == (0, 7)
    assert values_of(plog.read(0, 1 << 20)) == list(enumerate([b"a", b"b", b"c", b"d", b"e", b"f", b"g"]))
    assert segments(tmp_path / "t-0") == ["00000000000000000000.log"]


def test_read_starts_at_the_batch_holding_the_offset_and_honours_max_bytes(tmp_path):
    plog = PartitionLog(tmp_path / "t-0")
    for i in range(3):
        plog.append(batch([b"%d" % i] * 2), 0)
    size = len(batch([b"0"] * 2))
    assert [o for o, _ in values_of(plog.read(3, 1 << 20))] == [2, 3, 4, 5]
    assert len(plog.read(0, 2 * size + size - 1)) == 2 * size        # whole batches only
    assert len(plog.read(0, 1)) == size                              # at least one batch
    assert plog.read(0, 1, min_one=False) == b""
    assert plog.read(6, 100) == b""                                  # at the high watermark
    with pytest.raises(OffsetOutOfRange) as err:
        plog.read(7, 100)
    assert err.value.error_code == ErrorCode.OFFSET_OUT_OF_RANGE


def test_segments_roll_and_reads_cross_them(tmp_path):
    one = len(batch([b"v"] * 3))
    plog = PartitionLog(tmp_path / "t-0", segment_bytes=2 * one)
    for i in range(5):
        plog.append(batch([b"%d" % i] * 3), 0)
    assert segments(tmp_path / "t-0") == [f"{o:020d}.log" for o in (0, 6, 12)]
    assert [o for o, _ in values_of(plog.read(4, 1 << 20))] == list(range(3, 15))
    assert len(plog.read(4, 3 * one)) == 3 * one                     # stops inside segment 6
    # a fetch's read ends with the segment holding its offset, as Kafka's LocalLog.read
    assert [o for o, _ in values_of(plog.read(4, 1 << 20, one_segment=True))] == list(range(3, 6))
    assert [o for o, _ in values_of(plog.read(6, 1 << 20, one_segment=True))] == list(range(6, 12))
    plog.close()
    reopened = PartitionLog(tmp_path / "t-0", segment_bytes=2 * one)
    assert reopened.high_watermark == 15
    assert reopened.append(batch([b"x"]), 0).base_offset == 15
    assert values_of(reopened.read(0, 1 << 20))[-1] == (15, b"x")


def test_segment_rolls_after_segment_ms(tmp_path):
    plog = PartitionLog(tmp_path / "t-0", segment_ms=1_000)
    plog.append(batch([b"a"], timestamp=5_000), 5_000)
    plog.append(batch([b"b"], timestamp=5_500), 5_500)
    plog.append(batch([b"c"], timestamp=6_000), 9_000)       # the records' time counts, not the clock's
    assert segments(tmp_path / "t-0") == [f"{o:020d}.log" for o in (0,)]
    plog.append(batch([b"d"], timestamp=6_001), 6_001)       # over segment.ms past the first batch's
    assert segments(tmp_path / "t-0") == [f"{o:020d}.log" for o in (0, 3)]


def test_corrupt_batches_are_refused_and_nothing_is_written(tmp_path):
    plog = PartitionLog(tmp_path / "t-0")
    good = batch([b"hello"])
    flipped = bytearray(good)
    flipped[-1] ^= 0xFF
    with pytest.raises(CorruptRecords) as err:
        plog.append(bytes(flipped), 0)
    assert err.value.error_code == ErrorCode.CORRUPT_MESSAGE
    with pytest.raises(CorruptRecords):
        plog.append(good + good[:30], 0)                             # truncated second batch
    with pytest.raises(InvalidRecord):
        plog.append(b"", 0)
    assert plog.high_watermark == 0
    assert os.path.getsize(tmp_path / "t-0" / segments(tmp_path / "t-0")[0]) == 0


def test_batches_over_max_message_bytes_are_refused(tmp_path):
    plog = PartitionLog(tmp_path / "t-0", max_message_bytes=100)
    with pytest.raises(MessageTooLarge):
        plog.append(batch([b"x" * 200]), 0)


def test_torn_tail_is_truncated_on_reopen(tmp_path):
    plog = PartitionLog(tmp_path / "t-0")
    plog.append(batch([b"a", b"b"]), 0)
    plog.append(batch([b"c"]), 0)
    plog.close()
    path = tmp_path / "t-0" / "00000000000000000000.log"
    good_size = os.path.getsize(path)
    with open(path, "ab") as f:                      # a crash mid-write: half a batch
        f.write(batch([b"torn"])[:40])
    reopened = PartitionLog(tmp_path / "t-0")
    assert reopened.high_watermark == 3
    assert os.path.getsize(path) == good_size
    assert reopened.append(batch([b"d"]), 0) == (3, 3, -1)
    assert [v for _, v in values_of(reopened.read(0, 1 << 20))] == [b"a", b"b", b"c", b"d"]


def test_bad_crc_in_a_sealed_segment_keeps_it_and_every_later_segment(tmp_path):
    """Sealed segments were fsynced when they rolled: recovery neither cuts nor drops them
    (it used to truncate here and delete segment 4, handing offsets 3-5 out again)."""
    one = len(batch([b"v"]))
    plog = PartitionLog(tmp_path / "t-0", segment_bytes=2 * one)
    for i in range(6):
        plog.append(batch([b"%d" % i]), 0)
    plog.close()
    middle = tmp_path / "t-0" / f"{2:020d}.log"
    data = bytearray(middle.read_bytes())
    data[2 * one - 1] ^= 0x01                        # the second batch's last byte
    middle.write_bytes(bytes(data))
    reopened = PartitionLog(tmp_path / "t-0", segment_bytes=2 * one)
    assert reopened.high_watermark == 6
    assert segments(tmp_path / "t-0") == [f"{o:020d}.log" for o in (0, 2, 4)]
    assert middle.read_bytes() == bytes(data)        # untouched: the client sees the bad CRC
    assert values_of(reopened.read(4, 1 << 20)) == [(4, b"4"), (5, b"5")]
    assert reopened.append(batch([b"6"]), 0).base_offset == 6


def test_retention_by_bytes_deletes_oldest_segments_the_active_one_too(tmp_path):
    """As Kafka's deletableSegments: the active segment goes too once it breaches (a new one is
    rolled at the log end first), and an empty active segment never goes."""
    one = len(batch([b"v"]))
    plog = PartitionLog(tmp_path / "t-0", segment_bytes=one, retention_bytes=2 * one)
    for i in range(5):
        plog.append(batch([b"%d" % i]), 0)
    assert len(segments(tmp_path / "t-0")) == 5
    assert plog.apply_retention(0) == 3
    assert plog.log_start_offset == 3 and plog.size_bytes == 2 * one
    assert [v for _, v in values_of(plog.read(3, 1 << 20))] == [b"3", b"4"]
    with pytest.raises(OffsetOutOfRange):
        plog.read(2, 100)
    plog.retention_bytes = 0
    assert plog.apply_retention(0) == 2
    assert segments(tmp_path / "t-0") == [f"{5:020d}.log"]
    assert (plog.log_start_offset, plog.high_watermark) == (5, 5)
    assert plog.apply_retention(0) == 0                              # the empty active one stays
    assert plog.append(batch([b"5"]), 0).base_offset == 5
    plog.close()
    assert PartitionLog(tmp_path / "t-0").log_start_offset == 5


def test_retention_by_time_uses_each_segments_newest_timestamp(tmp_path):
    one = len(batch([b"v"]))
    plog = PartitionLog(tmp_path / "t-0", segment_bytes=one, retention_ms=1_000)
    for ts in (1_000, 2_000, 10_000, 11_000):
        plog.append(batch([b"v"], timestamp=ts), ts)
    assert plog.apply_retention(2_000) == 0                          # exactly 1000 ms: kept
    assert plog.apply_retention(3_001) == 2                          # 1000 and 2000 expired
    assert plog.apply_retention(60_000) == 2                         # the active one too
    assert (plog.log_start_offset, plog.high_watermark) == (4, 4)


def test_offset_for_timestamp_finds_the_first_record_at_or_after(tmp_path):
    """Kafka answers with the record, not its batch: a time matching the second record of a
    batch gives that record's offset and timestamp (librdkafka's tests 0054 and 0081)."""
    one = len(batch([b"v", b"w"]))
    plog = PartitionLog(tmp_path / "t-0", segment_bytes=2 * one)
    for ts in (100, 200, 300, 400):
        plog.append(batch([b"v", b"w"], timestamp=ts), 0)            # records at ts and ts + 1
    assert plog.offset_for_timestamp(0) == TimestampOffset(0, 100)
    assert plog.offset_for_timestamp(201) == TimestampOffset(3, 201)
    assert plog.offset_for_timestamp(250) == TimestampOffset(4, 300)
    assert plog.offset_for_timestamp(401) == TimestampOffset(7, 401)
    assert plog.offset_for_timestamp(402) == TimestampOffset(-1, -1)


def test_max_timestamp_is_the_record_holding_it(tmp_path):
    plog = PartitionLog(tmp_path / "t-0")
    assert plog.max_timestamp_offset() == TimestampOffset(-1, -1)
    plog.append(batch([b"a", b"b", b"c"], timestamp=500), 0)         # 500, 501, 502
    plog.append(batch([b"d", b"e"], timestamp=100), 0)               # older timestamps later
    assert plog.max_timestamp_offset() == TimestampOffset(2, 502)


def test_log_append_time_stamps_batches_and_keeps_them_valid(tmp_path):
    plog = PartitionLog(tmp_path / "t-0", log_append_time=True)
    assert plog.append(batch([b"a", b"b"], timestamp=5), 77_000) == (0, 1, 77_000)
    data = plog.read(0, 1 << 20)
    (header,) = read_batches(data)                                   # CRC re-computed
    assert header.max_timestamp == 77_000 and header.attributes & 0x08
    assert [v for _, v in values_of(data)] == [b"a", b"b"]


def test_closed_log_refuses_calls(tmp_path):
    plog = PartitionLog(tmp_path / "t-0")
    plog.close()
    with pytest.raises(UnknownTopicOrPartition):
        plog.append(batch([b"a"]), 0)
