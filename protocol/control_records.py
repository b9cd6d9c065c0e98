"""Transaction markers: the control batches that end a transaction in a partition.

A marker is a v2 batch with the transactional and control attributes, the producer's id and
epoch, base sequence -1 and one record: key = version INT16 (0) + type INT16 (0 abort,
1 commit), value = version INT16 (0) + the coordinator epoch INT32 (Kafka's
ControlRecordType and EndTransactionMarker).
"""

from __future__ import annotations

import struct

from .exceptions import DecodeError
from .record_batch import Record, build_batch, records_of
from .records import BatchHeader

TRANSACTIONAL, CONTROL = 0x10, 0x20
ABORT, COMMIT = 0, 1
_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hi")


def control_batch(producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                  timestamp_ms: int) -> bytes:
    """One marker batch at base offset 0 (the log sets the real one)."""
    like = BatchHeader(0, 0, 0, 2, 0, TRANSACTIONAL | CONTROL, 0, timestamp_ms, timestamp_ms,
                       producer_id, producer_epoch, -1, 1, 0)
    record = Record(0, timestamp_ms, _KEY.pack(0, COMMIT if commit else ABORT),
                    _VALUE.pack(0, coordinator_epoch))
    return build_batch(like, [record])


def parse_control(batch) -> tuple[bool, int]:
    """(commit?, coordinator epoch) of one whole marker batch."""
    _, records = records_of(batch)
    if not records or records[0].key is None or len(records[0].key) < _KEY.size:
        raise DecodeError("control batch without a control record key", field="records")
    _, kind = _KEY.unpack_from(records[0].key)
    epoch = _VALUE.unpack_from(records[0].value)[1] if records[0].value and \
        len(records[0].value) >= _VALUE.size else -1
    return kind == COMMIT, epoch
