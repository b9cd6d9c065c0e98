"""On-disk framing of one segment: ``[u32 length][u32 crc32c][u8 format][payload]``.

``length`` counts the format byte and the payload; the CRC covers the same bytes. Format 1
payload: ``i64 offset, i64 append_ms, u32 key_len, key, i32 value_len (-1 = tombstone), value``.
The offset travels with the record so compaction can drop records yet keep every survivor's
offset; the append time drives tombstone retention. Format 2 is an end marker
(``i64 next_offset``) that compaction writes last, so a cleaned segment still says which
offsets it covers (recovery needs that to finish an interrupted swap). Format 3 is a record of a
transaction: ``i64 producer_id, i16 producer_epoch, i8 control`` (-1: data, 0 abort marker,
1 commit marker), then format 1's payload.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from crc32c import crc32c

from .limits import MAX_FRAME

HEADER = struct.Struct(">IIB")          # length, crc32c, format
assert HEADER.size == 9
PREFIX = struct.Struct(">II")           # length, crc32c (the format byte is under the CRC)
assert PREFIX.size == 8
RECORD = struct.Struct(">qqI")          # offset, append_ms, key_len
assert RECORD.size == 20
VALUE_LEN = struct.Struct(">i")
assert VALUE_LEN.size == 4
MARKER = struct.Struct(">q")            # next offset
assert MARKER.size == 8

FORMAT_RECORD = 1
FORMAT_END_MARKER = 2
FORMAT_TXN_RECORD = 3
PRODUCER = struct.Struct(">qhb")         # producer id, producer epoch, control
assert PRODUCER.size == 11


class Frame(NamedTuple):
    """One decoded frame. ``key is None`` marks an end marker whose ``offset`` is the next offset."""
    offset: int
    append_ms: int
    key: bytes | None
    value: bytes | None
    position: int          # byte position of the frame in its segment
    producer_id: int = -1
    producer_epoch: int = -1
    control: int = -1

    @property
    def is_marker(self) -> bool:
        return self.key is None


def _frame(fmt: int, payload: bytes) -> bytes:
    body = bytes((fmt,)) + payload
    return PREFIX.pack(len(body), crc32c(body)) + body


def encode_record(offset: int, append_ms: int, key: bytes, value: bytes | None,
                  producer: tuple[int, int, int] | None = None) -> bytes:
    """One record frame; ``producer`` = (id, epoch, control) makes it a transaction's."""
    vlen = -1 if value is None else len(value)
    payload = b"".join((RECORD.pack(offset, append_ms, len(key)), key, VALUE_LEN.pack(vlen),
                        value or b""))
    if producer is None:
        return _frame(FORMAT_RECORD, payload)
    return _frame(FORMAT_TXN_RECORD, PRODUCER.pack(*producer) + payload)


def encode_marker(next_offset: int) -> bytes:
    return _frame(FORMAT_END_MARKER, MARKER.pack(next_offset))


def _parse_body(body: bytes, position: int) -> Frame | None:
    """The frame in ``body`` (format byte + payload), or None when its structure is wrong."""
    fmt = body[0]
    if fmt == FORMAT_END_MARKER:
        if len(body) != 1 + MARKER.size:
            return None
        return Frame(MARKER.unpack_from(body, 1)[0], -1, None, None, position)
    if fmt == FORMAT_TXN_RECORD and len(body) > 1 + PRODUCER.size:
        frame = _parse_body(bytes((FORMAT_RECORD,)) + body[1 + PRODUCER.size:], position)
        if frame is None:
            return None
        producer_id, epoch, control = PRODUCER.unpack_from(body, 1)
        return frame._replace(producer_id=producer_id, producer_epoch=epoch, control=control)
    if fmt != FORMAT_RECORD or len(body) < 1 + RECORD.size + VALUE_LEN.size:
        return None
    offset, append_ms, klen = RECORD.unpack_from(body, 1)
    kend = 1 + RECORD.size + klen
    if kend + VALUE_LEN.size > len(body):
        return None
    vlen, = VALUE_LEN.unpack_from(body, kend)
    vstart = kend + VALUE_LEN.size
    if vlen < -1 or vstart + max(vlen, 0) != len(body):
        return None
    value = None if vlen == -1 else body[vstart:]
    return Frame(offset, append_ms, body[1 + RECORD.size:kend], value, position)


def check_frame(buf: bytes, pos: int) -> tuple[Frame | None, str]:
    """Decode the frame at ``pos``: (frame, "") or (None, why it is not a valid frame)."""
    if pos + HEADER.size > len(buf):
        return None, f"torn header ({len(buf) - pos} of {HEADER.size} bytes)"
    length, crc = PREFIX.unpack_from(buf, pos)
    if length == 0:
        return None, "zero length"
    if length > MAX_FRAME:
        return None, f"implausible length {length}"
    end = pos + PREFIX.size + length
    if end > len(buf):
        return None, f"torn record (needs {end - pos} bytes, {len(buf) - pos} left)"
    body = bytes(buf[pos + PREFIX.size:end])
    if crc32c(body) != crc:
        return None, "crc mismatch"
    frame = _parse_body(body, pos)
    if frame is None:
        return None, f"malformed payload (format {body[0]})"
    return frame, ""


def scan(buf: bytes) -> tuple[list[Frame], int]:
    """Every frame up to the first short, zero-length, corrupt or malformed one.

    Returns (frames, valid_bytes). Never raises for any input.
    """
    frames: list[Frame] = []
    pos = 0
    while pos < len(buf):
        frame, _ = check_frame(buf, pos)
        if frame is None:
            break
        frames.append(frame)
        pos += PREFIX.size + PREFIX.unpack_from(buf, pos)[0]
    return frames, pos
