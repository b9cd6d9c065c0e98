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


_FRAME_HEAD = struct.Struct(">IIB")             # length, crc32c, format
_RECORD_HEAD = struct.Struct(">IIBqqI")         # ... then a format-1 record's offset, append_ms, key_len
_TXN_HEAD = struct.Struct(">IIBqhbqqI")         # ... then format 3's producer and the record's head
_new_frame = tuple.__new__                     # a Frame without NamedTuple's keyword handling
assert (HEADER.size, PREFIX.size, _RECORD_HEAD.size, VALUE_LEN.size, FORMAT_RECORD) == (9, 8, 29, 4, 1)
_RECORD_MIN = 1 + RECORD.size + VALUE_LEN.size
_TXN_MIN = 1 + PRODUCER.size + RECORD.size + VALUE_LEN.size


def check_frame(buf: bytes, pos: int) -> tuple[Frame | None, str]:
    """Decode the frame at ``pos``: (frame, "") or (None, why it is not a valid frame)."""
    frames, _, why = read_frames(buf, pos, 1)
    return (frames[0] if frames else None), why


def scan(buf: bytes) -> tuple[list[Frame], int]:
    """Every frame up to the first short, zero-length, corrupt or malformed one.

    Returns (frames, valid_bytes). Never raises for any input.
    """
    frames, valid, _ = read_frames(buf, 0, -1)
    return frames, valid


def read_frames(buf: bytes, pos: int, limit: int) -> tuple[list[Frame], int, str]:
    """Up to ``limit`` frames (-1: all) from ``pos``: (frames, where the last ends, why the
    reading stopped before the end, or "").

    The one parser of segments: recovery, replay, compaction and verify all read through it,
    so it is one flat loop: an unpack for each fixed head, nothing copied but the key and the
    value (the CRC is computed over a slice: cheaper than a view for frames this small).
    """
    frames: list[Frame] = []
    if type(buf) is not bytes:          # keys must hash; slices of bytes are bytes
        buf = bytes(buf)
    add, size, new = frames.append, len(buf), _new_frame
    head, record_head, txn_head, value_len = (_FRAME_HEAD.unpack_from, _RECORD_HEAD.unpack_from,
                                              _TXN_HEAD.unpack_from, VALUE_LEN.unpack_from)
    while pos < size and limit:
        if pos + 29 <= size:          # room for a format-1 record's head: read it all at once
            length, crc, fmt, offset, append_ms, klen = record_head(buf, pos)
        elif pos + 9 <= size:         # HEADER.size
            (length, crc, fmt), offset, append_ms, klen = head(buf, pos), 0, 0, 0
        else:
            return frames, pos, f"torn header ({size - pos} of {HEADER.size} bytes)"
        end = pos + 8 + length                                      # PREFIX.size
        if not 0 < length <= MAX_FRAME or end > size:
            return frames, pos, ("zero length" if length == 0 else f"implausible length {length}"
                                 if length > MAX_FRAME else
                                 f"torn record (needs {end - pos} bytes, {size - pos} left)")
        if crc32c(buf[pos + 8:end]) != crc:
            return frames, pos, "crc mismatch"
        if fmt == 1 and length >= _RECORD_MIN:                     # FORMAT_RECORD
            kstart, pid, epoch, control = pos + 29, -1, -1, -1       # _RECORD_HEAD.size
        elif fmt == FORMAT_TXN_RECORD and length >= _TXN_MIN:
            _, _, _, pid, epoch, control, offset, append_ms, klen = txn_head(buf, pos)
            kstart = pos + _TXN_HEAD.size
        elif fmt == FORMAT_END_MARKER and length == 1 + MARKER.size:
            add(new(Frame, (MARKER.unpack_from(buf, pos + HEADER.size)[0], -1, None, None, pos,
                            -1, -1, -1)))
            pos, limit = end, limit - 1
            continue
        else:
            return frames, pos, f"malformed payload (format {fmt})"
        vstart = kstart + klen + 4                                  # VALUE_LEN.size
        if vstart > end:
            return frames, pos, f"malformed payload (format {fmt})"
        vlen, = value_len(buf, vstart - 4)
        if vstart + vlen == end and vlen >= 0:
            add(new(Frame, (offset, append_ms, buf[kstart:vstart - 4], buf[vstart:end], pos, pid, epoch,
                            control)))
        elif vlen == -1 and vstart == end:
            add(new(Frame, (offset, append_ms, buf[kstart:vstart - 4], None, pos, pid, epoch, control)))
        else:
            return frames, pos, f"malformed payload (format {fmt})"
        pos, limit = end, limit - 1
    return frames, pos, ""
