"""Checking one stored record batch where it lies in a segment file, without copying it.

Recovery walks sealed segments by their headers only (their bytes were fsynced when they
rolled) and checks CRCs only where a crash can have torn something: the active segment after
an unclean shutdown. ``groupbroker log verify`` checks every batch's CRC.
"""

from __future__ import annotations

from crc32c import crc32c

from protocol.records import HEADER, BatchHeader

_LENGTH_END = 12                       # base offset + batch length
CRC_START = 21                         # first byte the CRC covers (attributes)


def check_batch(buf, pos: int, end: int, expected_offset: int, *, verify_crc: bool,
                below: int | None = None, gaps: bool = False) -> tuple[BatchHeader | None, str]:
    """(header, "") for a whole v2 batch at ``pos`` numbered ``expected_offset``, else (None, why).

    ``buf`` is the segment (an mmap or bytes) and ``end`` its size; ``below`` is the next
    segment's base offset, which no batch of this one may reach. With ``gaps`` the batch may
    start past ``expected_offset`` (a compacted segment keeps survivors at their offsets).
    """
    if end - pos < HEADER.size:
        return None, f"torn batch header ({end - pos} of {HEADER.size} bytes)"
    header = BatchHeader(*HEADER.unpack_from(buf, pos), position=pos)
    if header.magic != 2:
        return None, f"batch magic {header.magic}, not 2"
    if header.batch_length < HEADER.size - _LENGTH_END:
        return None, f"batch length {header.batch_length} too small"
    if pos + header.size > end:
        return None, f"torn batch (needs {header.size} bytes, {end - pos} left)"
    if header.base_offset < expected_offset or (header.base_offset != expected_offset and not gaps):
        return None, f"base offset {header.base_offset}, expected {expected_offset}"
    if header.last_offset_delta < 0:
        return None, f"negative last offset delta {header.last_offset_delta}"
    if below is not None and header.base_offset + header.last_offset_delta >= below:
        return None, f"last offset {header.base_offset + header.last_offset_delta} reaches the " \
                     f"next segment's base offset {below}"
    if verify_crc and crc32c(buf[pos + CRC_START:pos + header.size]) != header.crc:
        return None, "crc mismatch"
    return header, ""
