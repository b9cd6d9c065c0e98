"""A structured fuzzer for the Kafka protocol: requests built from the message declarations,
then mutated at the byte level.

Each request starts as a valid body of its (API, version), its fields drawn by a seeded
``random.Random`` from the declaration (hostile values included: long and control-character
strings, extreme integers, empty and null arrays), encoded with our codec, and then, most of
the time, damaged: bits flipped, bytes inserted or dropped, integers overwritten with edge
values, truncated, extended, or framed with a wrong size. The same seed gives the same
sequence of frames, so a failure can be replayed.

Standard library and our protocol package only: no broker code is imported.
"""

from __future__ import annotations

import random
import struct
import uuid

from protocol import REQUESTS
from protocol.exceptions import EncodeError
from protocol.header import encode_request
from tests.support.strategies import INT_RANGES, is_nullable, is_present, struct_class

#: Names the fuzzer uses for groups, topics, members and clients (never the healthy group's).
_STRINGS = ["", "fuzz", "fuzz-group", "fuzz-topic", "é日本\U0001f600", "\x00\x1b[31mred\x07",
            "a\nb\rc", "..", "__consumer_offsets", "fuzz/../x", "%s%n", "-1"]
_LONG = [255, 256, 4096, 32767, 40_000]


def _string(rng: random.Random) -> str:
    if rng.random() < 0.05:
        return "x" * rng.choice(_LONG)
    return rng.choice(_STRINGS) + (str(rng.randrange(4)) if rng.random() < 0.5 else "")


def _int(rng: random.Random, kind: str) -> int:
    lo, hi = INT_RANGES[kind]
    roll = rng.random()
    if roll < 0.4:
        return rng.choice([lo, hi, 0, -1 if lo < 0 else 1, 1, 2])
    if roll < 0.8:
        return max(lo, min(hi, rng.randrange(-3, 1000)))
    return rng.randint(lo, hi)


def random_body(rng: random.Random, msg, version: int):
    """A body of ``msg`` at ``version`` with every present field drawn at random."""
    return _struct(rng, msg, msg.cls, msg.fields, version, depth=0)


def _struct(rng, msg, cls, fields, version, depth):
    values = {}
    for f in fields:
        if is_present(msg, f, version):
            values[f.name] = _field(rng, msg, cls, f, version, depth)
    return cls(**values)


def _field(rng, msg, cls, f, version, depth):
    if is_nullable(f, version) and rng.random() < 0.1:
        return None
    if f.type.startswith("[]"):
        size = rng.choice([0, 1, 1, 2, 3]) if depth < 2 else rng.choice([0, 1])
        return tuple(_element(rng, msg, cls, f, version, depth) for _ in range(size))
    return _element(rng, msg, cls, f, version, depth)


def _element(rng, msg, cls, f, version, depth):
    t = f.element_type
    if t in INT_RANGES:
        return _int(rng, t)
    if t == "bool":
        return rng.random() < 0.5
    if t == "float64":
        return rng.choice([0.0, -1.0, 1e300, 0.5])
    if t == "string":
        return _string(rng)
    if t in ("bytes", "records"):
        return rng.randbytes(rng.choice([0, 1, 8, 61, 200]))
    if t == "uuid":
        return rng.choice([uuid.UUID(int=0), uuid.UUID(int=rng.getrandbits(128))])
    if f.is_struct:
        return _struct(rng, msg, struct_class(cls, f), msg.struct_fields(f), version, depth + 1)
    raise AssertionError(f"{msg.name}.{f.name}: no generator for type {f.type!r}")


_EDGE_I32 = [struct.pack(">i", v) for v in (-1, 0, 1, 0x7FFF, 0x7FFFFFFF, -0x80000000, 1 << 20)]


def mutate(rng: random.Random, body: bytes) -> bytes:
    """One to three byte-level mutations of ``body``."""
    data = bytearray(body)
    for _ in range(rng.randint(1, 3)):
        roll = rng.random()
        at = rng.randrange(len(data) + 1)
        if roll < 0.25 and data:
            data[min(at, len(data) - 1)] ^= 1 << rng.randrange(8)
        elif roll < 0.45:
            data[at:at + 4] = rng.choice(_EDGE_I32)
        elif roll < 0.6:
            data[at:at] = rng.randbytes(rng.randint(1, 8))
        elif roll < 0.75:
            del data[at:at + rng.randint(1, 8)]
        elif roll < 0.85:
            del data[at:]
        elif roll < 0.95:
            data += rng.randbytes(rng.randint(1, 16))
        else:
            data[at:at] = data[:rng.randint(0, 64)]
    return bytes(data)


def request_frames(seed: int, apis: dict[int, tuple[int, int]]):
    """An endless sequence of framed requests (size prefix included) for ``apis``:
    api key -> (min version, max version) as the broker advertised them."""
    rng = random.Random(seed)
    keys = sorted(k for k in apis if k in REQUESTS)
    correlation = 0
    while True:
        key = rng.choice(keys)
        lo, hi = apis[key]
        version = rng.randint(max(lo, REQUESTS[key].min_version), min(hi, REQUESTS[key].max_version))
        correlation += 1
        try:
            frame = encode_request(key, version, correlation, random_body(rng, REQUESTS[key], version),
                                   client_id=_string(rng) if rng.random() < 0.3 else "fuzzer")
        except EncodeError:
            continue                       # e.g. a long string in a version that cannot hold it
        payload = frame[4:]
        roll = rng.random()
        if roll < 0.15:
            yield frame                                          # valid: reaches deep paths
            continue
        head = 8 + 2 + max(0, struct.unpack_from(">h", payload, 8)[0])
        if roll < 0.95:
            payload = payload[:head] + mutate(rng, payload[head:])    # the body only
        else:
            payload = mutate(rng, payload)                            # the header too
        size = len(payload)
        if rng.random() < 0.02:
            size = rng.choice([size + 1, size - 1, 0, -1, 0x7FFFFFFF])
        yield struct.pack(">i", size) + payload
