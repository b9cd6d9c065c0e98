"""The records inside a v2 record batch: decompress, decode, and build batches again.

The broker mostly moves batches as opaque bytes (:mod:`protocol.records` reads only their
headers). A few features need the records themselves: ListOffsets by timestamp finds the
first *record* at or after a time, and log compaction keeps the latest record per key and
writes the survivors back in a batch compressed as the original was.

Record layout (all varints zigzag-encoded): length, attributes INT8, timestamp delta
VARLONG, offset delta VARINT, key (length, -1 for null), value (likewise), then a count of
headers, each a key STRING and a nullable value. Compression (gzip, snappy, lz4, zstd; the
batch attributes' low three bits) covers everything after the record count. Snappy data may
come in the xerial framing Java clients write, or raw, as librdkafka writes it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import cramjam
from crc32c import crc32c

from .exceptions import DecodeError
from .records import HEADER, BatchHeader, read_batches
from .wire import leb128

NONE, GZIP, SNAPPY, LZ4, ZSTD = range(5)
_LOG_APPEND_TIME = 0x08
DELETE_HORIZON = 0x40                  # attributes bit 6: the base timestamp is a delete horizon
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_BLOCK = 32 * 1024


@dataclass(frozen=True, slots=True)
class Record:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


def records_of(batch) -> tuple[BatchHeader, list[Record]]:
    """The header and the records of one whole batch (absolute offsets and timestamps)."""
    header = read_batches(batch, verify_crc=False)[0]
    body = bytes(memoryview(batch)[HEADER.size:header.size])
    data = decompress(header.compression, body)
    log_append = bool(header.attributes & _LOG_APPEND_TIME)
    records, pos = [], 0
    try:
        for _ in range(header.record_count):
            length, pos = _varint(data, pos)
            end = pos + length
            if length < 0 or end > len(data):
                raise DecodeError(f"record of {length} bytes runs past the batch", field="records")
            pos += 1                                            # record attributes: unused
            ts_delta, pos = _varint(data, pos)
            offset_delta, pos = _varint(data, pos)
            key, pos = _bytes(data, pos)
            value, pos = _bytes(data, pos)
            count, pos = _varint(data, pos)
            headers = []
            for _ in range(count):
                name, pos = _bytes(data, pos)
                header_value, pos = _bytes(data, pos)
                headers.append(((name or b"").decode("utf-8", "replace"), header_value))
            if pos != end:
                raise DecodeError("record length disagrees with its fields", field="records")
            records.append(Record(header.base_offset + offset_delta,
                                  header.max_timestamp if log_append else header.base_timestamp + ts_delta,
                                  key, value, tuple(headers)))
    except IndexError:
        raise DecodeError("truncated record", field="records") from None
    return header, records


def build_batch(like: BatchHeader, records: list[Record], *, base_offset: int | None = None,
                last_offset: int | None = None, delete_horizon_ms: int | None = None) -> bytes:
    """A batch holding ``records``, with ``like``'s producer, attributes and compression.

    Offsets and timestamps are kept: deltas are taken from ``base_offset`` (default: the
    first record's) and from the first record's timestamp, and the last offset delta is the
    last record's, so a compacted batch keeps each survivor at its offset. ``last_offset``
    keeps a batch's original end when its last records were removed (a producer's last
    sequence is its base sequence plus the last offset delta, so that must not move).
    ``delete_horizon_ms`` sets Kafka's delete horizon (attributes bit 6): the base timestamp
    field then holds the horizon and record timestamps are stored relative to it.
    """
    base = records[0].offset if base_offset is None else base_offset
    attributes = like.attributes & ~DELETE_HORIZON
    log_append = bool(like.attributes & _LOG_APPEND_TIME)
    base_ts = records[0].timestamp if records else like.base_timestamp
    max_ts = max((r.timestamp for r in records), default=like.max_timestamp)
    if log_append:
        base_ts = max_ts = like.max_timestamp
    if delete_horizon_ms is not None:
        attributes |= DELETE_HORIZON
        base_ts = delete_horizon_ms
    out = bytearray()
    for r in records:
        body = bytearray(b"\x00")
        body += _zigzag((max_ts if log_append else r.timestamp) - base_ts)
        body += _zigzag(r.offset - base)
        _put_bytes(body, r.key)
        _put_bytes(body, r.value)
        body += _zigzag(len(r.headers))
        for name, value in r.headers:
            _put_bytes(body, name.encode("utf-8"))
            _put_bytes(body, value)
        out += _zigzag(len(body)) + body
    payload = compress(like.compression, bytes(out))
    if last_offset is not None:
        last_delta = last_offset - base
    else:
        last_delta = records[-1].offset - base if records else like.last_offset_delta
    after_crc = struct.pack(">hiqqqhii", attributes, last_delta, base_ts, max_ts, like.producer_id,
                            like.producer_epoch, like.base_sequence, len(records)) + payload
    length = len(after_crc) + 9                      # leader epoch, magic, crc
    return struct.pack(">qiib", base, length, like.partition_leader_epoch, 2) + \
        struct.pack(">I", crc32c(after_crc)) + after_crc


def delete_horizon_of(header: BatchHeader) -> int | None:
    """The batch's delete horizon (ms) if compaction set one, else None."""
    return header.base_timestamp if header.attributes & DELETE_HORIZON else None


# --- compression -------------------------------------------------------------------------

def decompress(codec: int, data: bytes) -> bytes:
    try:
        if codec == NONE:
            return data
        if codec == GZIP:
            return bytes(cramjam.gzip.decompress(data))
        if codec == SNAPPY:
            return _unsnappy(data)
        if codec == LZ4:
            return bytes(cramjam.lz4.decompress(data))
        if codec == ZSTD:
            return bytes(cramjam.zstd.decompress(data))
    except (cramjam.DecompressionError, ValueError) as e:
        raise DecodeError(f"cannot decompress the records: {e}", field="records") from None
    raise DecodeError(f"unknown compression codec {codec}", field="records")


def compress(codec: int, data: bytes) -> bytes:
    if codec == NONE:
        return data
    if codec == GZIP:
        return bytes(cramjam.gzip.compress(data))
    if codec == SNAPPY:                              # xerial framing, as Java producers write
        blocks = [data[i:i + _XERIAL_BLOCK] for i in range(0, len(data), _XERIAL_BLOCK)] or [b""]
        out = bytearray(_XERIAL_MAGIC + struct.pack(">ii", 1, 1))
        for block in blocks:
            packed = bytes(cramjam.snappy.compress_raw(block))
            out += struct.pack(">i", len(packed)) + packed
        return bytes(out)
    if codec == LZ4:
        return bytes(cramjam.lz4.compress(data))
    if codec == ZSTD:
        return bytes(cramjam.zstd.compress(data))
    raise ValueError(f"unknown compression codec {codec}")


def _unsnappy(data: bytes) -> bytes:
    if not data.startswith(_XERIAL_MAGIC):
        return bytes(cramjam.snappy.decompress_raw(data))
    out, pos = bytearray(), 16
    while pos < len(data):
        size, = struct.unpack_from(">i", data, pos)
        if size < 0 or pos + 4 + size > len(data):
            raise ValueError("truncated xerial snappy block")
        out += bytes(cramjam.snappy.decompress_raw(data[pos + 4:pos + 4 + size]))
        pos += 4 + size
    return bytes(out)


# --- varints -----------------------------------------------------------------------------

def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift > 63:
            raise DecodeError("varint longer than 10 bytes", field="records")


def _bytes(data: bytes, pos: int) -> tuple[bytes | None, int]:
    n, pos = _varint(data, pos)
    if n < 0:
        return None, pos
    if pos + n > len(data):
        raise DecodeError("truncated record field", field="records")
    return data[pos:pos + n], pos + n


def _zigzag(n: int) -> bytes:
    """A signed 64-bit varint (varlong), as records encode their fields."""
    return leb128((n << 1) ^ (n >> 63))


def _put_bytes(out: bytearray, value: bytes | None) -> None:
    if value is None:
        out += _zigzag(-1)
    else:
        out += _zigzag(len(value)) + value
