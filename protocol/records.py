"""The v2 record-batch header: enough to assign offsets and check CRCs without decoding records.

Layout (61 bytes): base offset INT64, batch length INT32 (bytes after this
field), partition leader epoch INT32, magic INT8 (= 2), CRC-32C UINT32 over
everything from the attributes to the batch's end, attributes INT16, last
offset delta INT32, base timestamp INT64, max timestamp INT64, producer id
INT64, producer epoch INT16, base sequence INT32, record count INT32.

Because the CRC starts after itself, the broker can rewrite the base offset
(and the leader epoch) of a batch without recomputing it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from crc32c import crc32c

from .exceptions import DecodeError

HEADER = struct.Struct(">qiibIhiqqqhii")
assert HEADER.size == 61
_LENGTH_END = 12                       # base offset + batch length
_CRC_START = 21                        # first byte covered by the CRC (attributes)


@dataclass(frozen=True, slots=True)
class BatchHeader:
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int
    position: int                      # where the batch starts in the buffer it came from

    @property
    def size(self) -> int:
        """Bytes the whole batch occupies."""
        return _LENGTH_END + self.batch_length

    @property
    def compression(self) -> int:
        """0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd: the records stay compressed as sent."""
        return self.attributes & 0x07

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & 0x10)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & 0x20)


def read_batches(data, *, verify_crc: bool = True) -> list[BatchHeader]:
    """Every batch header in ``data``, which must hold whole v2 batches and nothing else."""
    view = memoryview(data)
    out = []
    pos = 0
    while pos < len(view):
        if len(view) - pos < HEADER.size:
            raise DecodeError(f"truncated record batch header at byte {pos}", field="records")
        fields = HEADER.unpack_from(view, pos)
        header = BatchHeader(*fields, position=pos)
        if header.magic != 2:
            raise DecodeError(f"record batch magic {header.magic} at byte {pos}; only v2 is supported",
                              field="records")
        if header.batch_length < HEADER.size - _LENGTH_END:
            raise DecodeError(f"record batch length {header.batch_length} too small at byte {pos}",
                              field="records")
        end = pos + header.size
        if end > len(view):
            raise DecodeError(f"record batch at byte {pos} runs past the data", field="records")
        if verify_crc:
            check_crc(view, header)
        out.append(header)
        pos = end
    return out


def check_crc(data, header: BatchHeader) -> None:
    """Raise DecodeError unless the batch ``header`` describes (in ``data``) has a valid CRC."""
    start = header.position
    if crc32c(memoryview(data)[start + _CRC_START:start + header.size]) != header.crc:
        raise DecodeError(f"record batch CRC mismatch at byte {start}", field="records")


def with_base_offset(batch, base_offset: int, leader_epoch: int | None = None) -> bytes:
    """A copy of one batch with its base offset (and partition leader epoch, if given) set:
    neither is covered by the CRC, which stays valid."""
    view = memoryview(batch)
    if leader_epoch is None:
        return struct.pack(">q", base_offset) + bytes(view[8:])
    return struct.pack(">q", base_offset) + bytes(view[8:_LENGTH_END]) + struct.pack(">i", leader_epoch) \
        + bytes(view[_LENGTH_END + 4:])


def batch_crc(batch) -> int:
    """The CRC-32C a batch should carry (for building batches in tests and tools)."""
    return crc32c(memoryview(batch)[_CRC_START:])
