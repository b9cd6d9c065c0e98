"""Transaction markers: the control batches that end a transaction in a partition.

A marker is a v2 batch with the transactional and control attributes, the producer's id and
epoch, base sequence -1 and one record whose key is the control record key (version INT16 = 0,
type INT16: 0 abort, 1 commit) and whose value is the end-transaction marker (version INT16 = 0,
coordinator epoch INT32), as Kafka writes them. Readers accept later key and value versions as
version 0 (a later version may only append fields) and refuse negative ones, as Kafka does.
"""

from __future__ import annotations

import struct

from .exceptions import DecodeError
from .record_batch import Record, build_batch, records_of
from .records import BatchHeader

TRANSACTIONAL, CONTROL = 0x10, 0x20
ABORT, COMMIT = 0, 1
KEY_VERSION = MARKER_VERSION = 0
_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hi")


def control_key(commit: bool) -> bytes:
    """The key of a commit or abort marker record."""
    return _KEY.pack(KEY_VERSION, COMMIT if commit else ABORT)


def control_type(key) -> int:
    """The control type a control record's key names (ABORT, COMMIT, or another Kafka type)."""
    if key is None or len(key) < _KEY.size:
        raise DecodeError(f"control record key of {0 if key is None else len(key)} bytes; "
                          f"it needs {_KEY.size}", field="records")
    version, kind = _KEY.unpack_from(key)
    if version < 0:
        raise DecodeError(f"control record key version {version}", field="records")
    return kind


def marker_value(coordinator_epoch: int) -> bytes:
    """The value of a marker record: which coordinator epoch wrote it."""
    return _VALUE.pack(MARKER_VERSION, coordinator_epoch)


def marker_coordinator_epoch(value) -> int:
    """The coordinator epoch of a marker record's value."""
    if value is None or len(value) < _VALUE.size:
        raise DecodeError(f"end transaction marker value of {0 if value is None else len(value)} "
                          f"bytes; it needs {_VALUE.size}", field="records")
    version, epoch = _VALUE.unpack_from(value)
    if version < 0:
        raise DecodeError(f"end transaction marker version {version}", field="records")
    return epoch


def control_batch(producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                  timestamp_ms: int) -> bytes:
    """One whole marker batch at base offset 0 (the log sets the real one; the CRC does not
    cover it)."""
    like = BatchHeader(0, 0, 0, 2, 0, TRANSACTIONAL | CONTROL, 0, timestamp_ms, timestamp_ms,
                       producer_id, producer_epoch, -1, 1, 0)
    record = Record(0, timestamp_ms, control_key(commit), marker_value(coordinator_epoch))
    return build_batch(like, [record])


def parse_control(batch) -> tuple[bool, int]:
    """(commit?, coordinator epoch) of one whole marker batch.

    DecodeError unless it is a control batch whose first record is a commit or abort marker:
    a control batch emptied by compaction, or one of another control type, ends no transaction.
    """
    header, records = records_of(batch)
    if not header.attributes & CONTROL:
        raise DecodeError("not a control batch", field="records")
    if not records:
        raise DecodeError("control batch without a record", field="records")
    kind = control_type(records[0].key)
    if kind not in (ABORT, COMMIT):
        raise DecodeError(f"control record type {kind} is not an end-transaction marker",
                          field="records")
    return kind == COMMIT, marker_coordinator_epoch(records[0].value)
