"""The offsets log never acknowledges a record its own recovery (or ``log verify``) would refuse."""

from __future__ import annotations

import pytest

from offsets_log.errors import RecordTooLargeError
from offsets_log.log import ShardLog, verify
from offsets_log.records import Record
from offsets_log.segment import MAX_FRAME, RECORD, VALUE_LEN

#: key b"k": the largest value whose frame (format byte + payload) is exactly MAX_FRAME
LARGEST_VALUE = MAX_FRAME - 1 - RECORD.size - 1 - VALUE_LEN.size


def test_the_largest_record_the_log_accepts_survives_a_restart_and_verifies(tmp_path):
    log = ShardLog(str(tmp_path))
    [offset] = log.append([Record(b"k", b"v" * LARGEST_VALUE)], 1)
    log.sync()
    log.close()
    reopened = ShardLog(str(tmp_path))
    assert [(o, len(r.value)) for o, r in reopened.read_all()] == [(offset, LARGEST_VALUE)]
    assert verify(str(tmp_path)) == []


def test_one_byte_more_is_refused_whole_and_the_log_keeps_working(tmp_path):
    log = ShardLog(str(tmp_path))
    log.append([Record(b"a", b"1")], 1)
    with pytest.raises(RecordTooLargeError):
        log.append([Record(b"b", b"2"), Record(b"k", b"v" * (LARGEST_VALUE + 1))], 1)
    assert log.append([Record(b"c", b"3")], 1) == [1]        # nothing of the refused batch
    log.sync()
    assert [r.key for _, r in ShardLog(str(tmp_path)).read_all()] == [b"a", b"c"]
    assert verify(str(tmp_path)) == []
