"""Kafka's wire primitives as bounds-checked ``construct`` constructs.

Every construct here works two ways, and the differential tests hold them to
the same answers:

* interpreted: ``_parse``/``_build`` on a stream, reporting the field path of a
  failure;
* compiled: ``emit_decode``/``emit_encode`` write flat Python that reads a
  ``bytes`` object at ``pos`` (bounded by ``end``) or appends chunks to the
  list ``out``. :class:`Body` hands that source to ``construct``'s compiler
  through ``_emitparse``/``_emitbuild``, so ``Body.compile()`` is one module of
  straight-line code per message version.

construct's own ``Bytes``, ``PascalString``, ``PrefixedArray`` and ``VarInt``
are never used: compiled, they accept truncated input and negative lengths.
Here every length passes a check before anything is sliced or allocated, and
unsigned varints stop at 5 bytes. A body must end exactly where its last field
ends, except a request read from a :class:`Lenient` stream: Kafka's request
parser never looks past the last field, and some clients (librdkafka 2.12-2.16's
all-topics Metadata) send stray bytes there.
"""

from __future__ import annotations

import io
import struct
import uuid
from itertools import count

from construct import Construct, ConstructError

ZERO_UUID = uuid.UUID(int=0)
_ids = count()


class WireError(ConstructError):
    """A malformed value met while decoding or encoding (both modes raise it)."""


# --- runtime helpers shared by both modes and imported by generated code -----------------

def read_uvarint(data, pos: int, end: int) -> tuple[int, int]:
    """Unsigned LEB128, at most 5 bytes (a 32-bit value), never past ``end``."""
    result = shift = 0
    for _ in range(5):
        if pos >= end:
            raise WireError("truncated varint")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            if result > 0xFFFFFFFF:
                raise WireError("varint exceeds 32 bits")
            return result, pos
        shift += 7
    raise WireError("varint longer than 5 bytes")


def leb128(n: int) -> bytes:
    """Unsigned LEB128 of any size (a varint; zigzag it first for a signed one)."""
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_UVARINT_CACHE = [leb128(i) for i in range(1024)]


def uvarint(n: int) -> bytes:
    """Encode an unsigned varint (small values come from a table)."""
    if 0 <= n < 1024:
        return _UVARINT_CACHE[n]
    if n < 0 or n > 0xFFFFFFFF:
        raise WireError(f"unsigned varint out of range: {n}")
    return leb128(n)


def fail(reason: str):
    raise WireError(reason)


def read_exact(stream, n: int, path: str) -> bytes:
    """Interpreted-mode read that refuses short data."""
    if n < 0:
        raise WireError(f"negative length {n} at {path}")
    data = stream.read(n)
    if len(data) != n:
        raise WireError(f"truncated at {path}: wanted {n} bytes, have {len(data)}")
    return data


class Lenient(io.BytesIO):
    """A request body: bytes after its last field are ignored, as Kafka's parser ignores them."""


def _ends(stream, path: str) -> None:
    """Refuse bytes left after a value's last field (unless the stream is :class:`Lenient`)."""
    if type(stream) is Lenient:
        return
    left = len(stream.getbuffer()) - stream.tell()
    if left:
        raise WireError(f"{left} bytes left after the last field at {path}")


def stream_uvarint(stream, path: str) -> int:
    result = shift = 0
    for _ in range(5):
        b = read_exact(stream, 1, path)[0]
        result |= (b & 0x7F) << shift
        if b < 0x80:
            if result > 0xFFFFFFFF:
                raise WireError(f"varint exceeds 32 bits at {path}")
            return result
        shift += 7
    raise WireError(f"varint longer than 5 bytes at {path}")


class Emitter:
    """Collects the generated module: helper functions and named constants."""

    def __init__(self):
        self.defs: list[str] = []
        self.consts: dict[str, str] = {}

    def fresh(self, stem: str) -> str:
        return f"{stem}{next(_ids)}"

    def const(self, source: str) -> str:
        """A module-level constant for an expression, reused when equal."""
        name = self.consts.get(source)
        if name is None:
            name = self.consts[source] = self.fresh("K")
        return name

    def struct(self, fmt: str) -> str:
        return self.const(f"_struct.Struct({('>' + fmt)!r})")

    def source(self) -> str:
        head = [f"{name} = {src}" for src, name in self.consts.items()]
        return "\n".join(head + self.defs)


def _indent(lines: list[str], n: int = 1) -> list[str]:
    return ["    " * n + line for line in lines]


def _length_prefix(compact: bool, var: str) -> list[str]:
    """Lines reading a (compact or classic) length into ``var``; null is -1."""
    if compact:
        return [f"{var} = data[pos]",
                "if " + var + " < 128: pos += 1",
                f"else: {var}, pos = read_uvarint(data, pos, end)",
                f"{var} -= 1"]
    return [f"{var}, = _I32.unpack_from(data, pos) if pos + 4 <= end else fail('truncated length')",
            "pos += 4"]


def _write_length(compact: bool, expr: str, fmt: str = "i") -> str:
    if compact:
        return f"uvarint({expr} + 1)"
    return f"_{'I16' if fmt == 'h' else 'I32'}.pack({expr})"


class Kind(Construct):
    """Base of the Kafka wire constructs: a name for error messages and two modes."""

    fmt: str | None = None          # struct format of a fixed-size value, batchable
    type_name = "?"

    def emit_decode(self, g: Emitter, var: str) -> list[str]:
        raise NotImplementedError

    def emit_encode(self, g: Emitter, expr: str) -> list[str]:
        raise NotImplementedError


class Fixed(Kind):
    """INT8/16/32/64, UINT16, FLOAT64, BOOLEAN: one ``struct`` format character."""

    def __init__(self, fmt: str, type_name: str):
        super().__init__()
        self.fmt, self.type_name = fmt, type_name
        self._s = struct.Struct(">" + fmt)

    def _parse(self, stream, context, path):
        value = self._s.unpack(read_exact(stream, self._s.size, path))[0]
        return value

    def _build(self, obj, stream, context, path):
        if self.fmt == "?" and type(obj) is not bool:
            raise WireError(f"{path}: bool expected, not {type(obj).__name__}")
        try:
            stream.write(self._s.pack(obj))
        except struct.error as e:
            raise WireError(f"{path}: {e}") from e
        return obj

    def emit_decode(self, g, var):
        s = g.struct(self.fmt)
        return [f"{var}, = {s}.unpack_from(data, pos)", f"pos += {self._s.size}"]

    def emit_encode(self, g, expr):
        return [*self.emit_check(expr), f"out.append({g.struct(self.fmt)}.pack({expr}))"]

    def emit_check(self, expr: str) -> list[str]:
        """``struct`` packs any object as a bool by truth; the wire wants a real bool."""
        if self.fmt != "?":
            return []
        return [f"if {expr}.__class__ is not bool: fail('bool expected')"]


class Uuid(Kind):
    type_name = "uuid"

    def _parse(self, stream, context, path):
        return uuid.UUID(bytes=read_exact(stream, 16, path))

    def _build(self, obj, stream, context, path):
        stream.write(obj.bytes)
        return obj

    def emit_decode(self, g, var):
        return ["if pos + 16 > end: fail('truncated uuid')",
                f"{var} = _UUID(bytes=data[pos:pos + 16])", "pos += 16"]

    def emit_encode(self, g, expr):
        return [f"out.append({expr}.bytes)"]


#: Kafka's generated readers refuse a STRING longer than this, compact ones too (whose length
#: could say more): such a request is malformed, whatever its version.
MAX_STRING_BYTES = 0x7FFF


class Blob(Kind):
    """STRING / BYTES / RECORDS, classic or compact, optionally nullable."""

    def __init__(self, text: bool, nullable: bool, compact: bool, short: bool):
        super().__init__()
        self.text, self.nullable, self.compact = text, nullable, compact
        self.short = short          # classic STRING uses an INT16 length, BYTES an INT32
        self.type_name = "string" if text else "bytes"

    def _null_or_fail(self, path):
        if not self.nullable:
            raise WireError(f"null {self.type_name} not allowed at {path}")
        return None

    def _parse(self, stream, context, path):
        if self.compact:
            n = stream_uvarint(stream, path) - 1
        elif self.short:
            n = struct.unpack(">h", read_exact(stream, 2, path))[0]
        else:
            n = struct.unpack(">i", read_exact(stream, 4, path))[0]
        if n < 0:
            if n != -1:
                raise WireError(f"negative length {n} at {path}")
            return self._null_or_fail(path)
        if self.text and n > MAX_STRING_BYTES:
            raise WireError(f"string of {n} bytes at {path}")
        raw = read_exact(stream, n, path)
        try:
            return raw.decode("utf-8") if self.text else raw
        except UnicodeDecodeError as e:
            raise WireError(f"invalid UTF-8 at {path}") from e

    def _build(self, obj, stream, context, path):
        if obj is None:
            self._null_or_fail(path)
            stream.write(b"\x00" if self.compact else (b"\xff\xff" if self.short else b"\xff\xff\xff\xff"))
            return obj
        if not self.text and not isinstance(obj, (bytes, bytearray, memoryview)):
            raise WireError(f"{path}: {self.type_name} must be bytes-like, not {type(obj).__name__}")
        raw = obj.encode("utf-8") if self.text else bytes(obj)
        if self.compact:
            stream.write(uvarint(len(raw) + 1))
        else:
            try:
                stream.write(struct.pack(">h" if self.short else ">i", len(raw)))
            except struct.error as e:
                raise WireError(f"{path}: too long ({len(raw)} bytes)") from e
        stream.write(raw)
        return obj

    def emit_decode(self, g, var):
        n = g.fresh("n")
        if self.compact:
            lines = _length_prefix(True, n)
            if self.text:           # a classic STRING cannot say more (INT16 length)
                lines.append(f"if {n} > {MAX_STRING_BYTES}: fail('string too long')")
        else:
            unpack = "_I16" if self.short else "_I32"
            width = 2 if self.short else 4
            lines = [f"{n}, = {unpack}.unpack_from(data, pos)", f"pos += {width}"]
        null = f"{var} = None" if self.nullable else f"fail('null {self.type_name}')"
        value = f"data[pos:{n}].decode()" if self.text else f"data[pos:{n}]"
        lines += [f"if {n} >= 0:",
                  f"    {n} += pos",
                  f"    if {n} > end: fail('truncated {self.type_name}')",
                  f"    {var} = {value}",
                  f"    pos = {n}",
                  f"elif {n} == -1: {null}",
                  "else: fail('negative length')"]
        return lines

    def emit_encode(self, g, expr):
        b = g.fresh("b")
        if self.compact:
            null = "b'\\x00'"
            head = f"uvarint(len({b}) + 1)"
        else:
            null = "b'\\xff\\xff'" if self.short else "b'\\xff\\xff\\xff\\xff'"
            head = f"{'_I16' if self.short else '_I32'}.pack(len({b}))"
        conv = f"{expr}.encode()" if self.text else expr
        lines = [f"{b} = {expr}", f"if {b} is None:"]
        lines.append(f"    out.append({null})" if self.nullable else f"    fail('null {self.type_name}')")
        lines += ["else:"]
        if self.text:
            lines.append(f"    {b} = {conv}")
        else:
            lines.append(f"    if not isinstance({b}, _BYTES): fail('{self.type_name} must be bytes-like')")
        lines += [f"    out.append({head})", f"    out.append({b})"]
        return lines


class Array(Kind):
    """ARRAY / COMPACT_ARRAY of one element kind; -1 (or 0 compact) is null."""

    def __init__(self, element: Kind, nullable: bool, compact: bool):
        super().__init__()
        self.element, self.nullable, self.compact = element, nullable, compact
        self.type_name = "[]" + element.type_name

    def _parse(self, stream, context, path):
        if self.compact:
            n = stream_uvarint(stream, path) - 1
        else:
            n = struct.unpack(">i", read_exact(stream, 4, path))[0]
        if n < 0:
            if n != -1 or not self.nullable:
                raise WireError(f"bad array length {n} at {path}")
            return None
        return tuple(self.element._parse(stream, context, f"{path}[{i}]") for i in range(n))

    def _build(self, obj, stream, context, path):
        if obj is None:
            if not self.nullable:
                raise WireError(f"null array not allowed at {path}")
            stream.write(b"\x00" if self.compact else b"\xff\xff\xff\xff")
            return obj
        stream.write(uvarint(len(obj) + 1) if self.compact else struct.pack(">i", len(obj)))
        for i, item in enumerate(obj):
            self.element._build(item, stream, context, f"{path}[{i}]")
        return obj

    def emit_decode(self, g, var):
        n, lst, item = g.fresh("n"), g.fresh("l"), g.fresh("v")
        lines = _length_prefix(self.compact, n)
        null = f"{var} = None" if self.nullable else "fail('null array')"
        body: list[str]
        if self.element.fmt is not None:
            size = struct.calcsize(">" + self.element.fmt)
            body = [f"if pos + {n} * {size} > end: fail('truncated array')",
                    f"{var} = _struct.unpack_from('>%d{self.element.fmt}' % {n}, data, pos)",
                    f"pos += {n} * {size}"]
        else:
            body = [f"if {n} > end - pos: fail('array longer than its frame')",
                    f"{lst} = []",
                    f"for _ in range({n}):",
                    *_indent(self.element.emit_decode(g, item)),
                    f"    {lst}.append({item})",
                    f"{var} = tuple({lst})"]
        return lines + [f"if {n} >= 0:", *_indent(body),
                        f"elif {n} == -1: {null}", "else: fail('negative array length')"]

    def emit_encode(self, g, expr):
        a, item = g.fresh("a"), g.fresh("v")
        null = "b'\\x00'" if self.compact else "b'\\xff\\xff\\xff\\xff'"
        lines = [f"{a} = {expr}", f"if {a} is None:"]
        lines.append(f"    out.append({null})" if self.nullable else "    fail('null array')")
        lines += ["else:", f"    out.append({_write_length(self.compact, f'len({a})')})"]
        if self.element.fmt is not None:
            lines.append(f"    out.append(_struct.pack('>%d{self.element.fmt}' % len({a}), *{a}))")
        else:
            lines += [f"    for {item} in {a}:", *_indent(self.element.emit_encode(g, item), 2)]
        return lines


class FieldSpec:
    """One field of a struct at one version, as the codec needs it."""

    __slots__ = ("name", "kind", "present", "default", "default_src", "strict", "tag")

    def __init__(self, name, kind, present, default, default_src, strict, tag):
        self.name, self.kind, self.present = name, kind, present
        self.default, self.default_src, self.strict, self.tag = default, default_src, strict, tag


class StructKind(Kind):
    """A struct at one version: fields in order, then tagged fields when flexible.

    ``fields`` lists every field of the declaration (for the constructor's
    argument order); absent ones take their defaults on decode and must hold
    their defaults on encode unless Kafka marks them ignorable.
    """

    def __init__(self, cls, class_src: str, fields: list[FieldSpec], flexible: bool):
        super().__init__()
        self.cls, self.class_src, self.fields, self.flexible = cls, class_src, fields, flexible
        self.type_name = cls.__name__
        self.plain = [f for f in fields if f.present and f.tag is None]
        self.tagged = sorted((f for f in fields if f.present and f.tag is not None), key=lambda f: f.tag)
        self._dec = self._enc = None

    # interpreted -------------------------------------------------------------------------
    def _parse(self, stream, context, path):
        values = {f.name: f.default for f in self.fields}
        for f in self.plain:
            values[f.name] = f.kind._parse(stream, context, f"{path}.{f.name}")
        if self.flexible:
            by_tag = {f.tag: f for f in self.tagged}
            for _ in range(stream_uvarint(stream, path)):      # any order, as Kafka reads them
                tag, size = stream_uvarint(stream, path), stream_uvarint(stream, path)
                raw = read_exact(stream, size, path)
                f = by_tag.get(tag)
                if f is not None:
                    from io import BytesIO
                    sub = BytesIO(raw)
                    values[f.name] = f.kind._parse(sub, context, f"{path}.{f.name}")
                    _ends(sub, f"{path}.{f.name}")
        return self.cls(**values)

    def _build(self, obj, stream, context, path):
        for f in self.fields:
            if not f.present and f.strict and getattr(obj, f.name) != f.default:
                raise WireError(f"{path}.{f.name} is not in this version and is not the default")
        for f in self.plain:
            f.kind._build(getattr(obj, f.name), stream, context, f"{path}.{f.name}")
        if self.flexible:
            from io import BytesIO
            chunks = []
            for f in self.tagged:
                value = getattr(obj, f.name)
                if value != f.default:
                    sub = BytesIO()
                    f.kind._build(value, sub, context, f"{path}.{f.name}")
                    raw = sub.getvalue()
                    chunks.append(uvarint(f.tag) + uvarint(len(raw)) + raw)
            stream.write(uvarint(len(chunks)) + b"".join(chunks))
        return obj

    # compiled ----------------------------------------------------------------------------
    def _function_names(self, g):
        if self._dec is None or self._dec[0] is not g:
            self._dec = (g, g.fresh(f"d_{self.cls.__name__}_"), g.fresh(f"e_{self.cls.__name__}_"))
            self._emit_functions(g, self._dec[1], self._dec[2])
        return self._dec[1], self._dec[2]

    def emit_decode(self, g, var):
        """Nested structs are decoded inline: a call per array element costs more than its body."""
        return self.decode_body(g, var)

    def emit_encode(self, g, expr):
        _, enc = self._function_names(g)
        return [f"{enc}({expr}, out)"]

    def _runs(self):
        """Group adjacent fixed-size fields so one ``struct`` call reads them all."""
        runs: list[list[FieldSpec]] = []
        for f in self.plain:
            if f.kind.fmt is not None and runs and runs[-1][0].kind.fmt is not None:
                runs[-1].append(f)
            else:
                runs.append([f])
        return runs

    def _emit_functions(self, g, dec, enc):
        g.defs.append("\n".join([f"def {dec}(data, pos, end):", *_indent(self.decode_body(g, "o")),
                                 "    return o, pos"]))
        self._emit_encoder(g, enc)

    def decode_body(self, g, var: str) -> list[str]:
        """Lines that read this struct at ``pos`` and leave the object in ``var``."""
        cls = g.const(self.class_src)
        local = {f.name: g.fresh("f") for f in self.fields}
        body: list[str] = []
        for run in self._runs():
            if len(run) > 1:
                fmt = "".join(f.kind.fmt for f in run)
                targets = ", ".join(local[f.name] for f in run)
                body += [f"{targets}, = {g.struct(fmt)}.unpack_from(data, pos)",
                         f"pos += {struct.calcsize('>' + fmt)}"]
            else:
                body += run[0].kind.emit_decode(g, local[run[0].name])
        for f in self.fields:
            if not f.present or f.tag is not None:
                body.append(f"{local[f.name]} = {g.const(f.default_src)}")
        if self.flexible:
            # Nearly every struct carries no tagged fields: one byte test covers that case.
            body += ["if data[pos] == 0: pos += 1", "else:",
                     *_indent(self._emit_tagged_decode(g, local))]
        # Fill the slots directly: twice as fast as a frozen dataclass's __init__.
        body.append(f"{var} = _new({cls})")
        body += [f"{g.const(f'{self.class_src}.{f.name}.__set__')}({var}, {local[f.name]})"
                 for f in self.fields]
        return body

    def _emit_encoder(self, g, enc):
        out: list[str] = []
        for f in self.fields:
            if not f.present and f.strict:
                out.append(f"if o.{f.name} != {g.const(f.default_src)}: "
                           f"fail('{self.cls.__name__}.{f.name} is not in this version')")
        for run in self._runs():
            if len(run) > 1:
                fmt = "".join(f.kind.fmt for f in run)
                for f in run:
                    out += f.kind.emit_check(f"o.{f.name}")
                out.append(f"out.append({g.struct(fmt)}.pack({', '.join('o.' + f.name for f in run)}))")
            else:
                out += run[0].kind.emit_encode(g, f"o.{run[0].name}")
        if self.flexible:
            out += self._emit_tagged_encode(g)
        g.defs.append("\n".join([f"def {enc}(o, out):", *_indent(out or ["pass"])]))

    def _emit_tagged_decode(self, g, local):
        n, tag, size, stop, outer = (g.fresh(s) for s in ("n", "t", "z", "s", "e"))
        lines = [f"{n} = data[pos]", f"if {n} < 128: pos += 1",
                 f"else: {n}, pos = read_uvarint(data, pos, end)",
                 f"{outer} = end",
                 f"for _ in range({n}):",
                 f"    {tag}, pos = read_uvarint(data, pos, end)",
                 f"    {size}, pos = read_uvarint(data, pos, end)",
                 f"    {stop} = pos + {size}",
                 f"    if {stop} > end: fail('truncated tagged field')"]
        first = True
        for f in self.tagged:
            lines.append(f"    {'if' if first else 'elif'} {tag} == {f.tag}:")
            first = False
            lines += _indent([f"end = {stop}", *f.kind.emit_decode(g, local[f.name]),
                              f"if pos != {stop}: fail('tagged field size mismatch')",
                              f"end = {outer}"], 2)
        lines.append(f"    {'if True' if first else 'else'}: pos = {stop}")
        return lines

    def _emit_tagged_encode(self, g):
        if not self.tagged:
            return ["out.append(b'\\x00')"]
        chunks, outer, raw = g.fresh("c"), g.fresh("o"), g.fresh("r")
        lines = [f"{chunks} = []", f"{outer} = out"]
        for f in self.tagged:
            # Encode the value into a fresh ``out`` to learn its size, then restore ``out``.
            lines += [f"if o.{f.name} != {g.const(f.default_src)}:",
                      "    out = []",
                      *_indent(f.kind.emit_encode(g, f"o.{f.name}")),
                      f"    {raw} = b''.join(out)",
                      f"    {chunks}.append(uvarint({f.tag}) + uvarint(len({raw})) + {raw})"]
        lines += [f"out = {outer}", f"out.append(uvarint(len({chunks})))", f"out.extend({chunks})"]
        return lines


class NullableStruct(Kind):
    """A struct that may be null: an INT8 marker (-1 null, 1 present) precedes it."""

    def __init__(self, inner: StructKind):
        super().__init__()
        self.inner = inner
        self.type_name = inner.type_name

    def _parse(self, stream, context, path):
        marker = struct.unpack(">b", read_exact(stream, 1, path))[0]
        return None if marker < 0 else self.inner._parse(stream, context, path)

    def _build(self, obj, stream, context, path):
        if obj is None:
            stream.write(b"\xff")
            return obj
        stream.write(b"\x01")
        return self.inner._build(obj, stream, context, path)

    def emit_decode(self, g, var):
        return ["if pos >= end: fail('truncated struct marker')",
                "if data[pos] >= 128:", "    pos += 1", f"    {var} = None",
                "else:", "    pos += 1", *_indent(self.inner.emit_decode(g, var))]

    def emit_encode(self, g, expr):
        v = g.fresh("s")
        return [f"{v} = {expr}", f"if {v} is None: out.append(b'\\xff')",
                "else:", "    out.append(b'\\x01')", *_indent(self.inner.emit_encode(g, v))]


class Parts:
    """A stream that keeps written chunks apart so large record sets are never copied."""

    __slots__ = ("parts",)

    def __init__(self):
        self.parts: list = []

    def write(self, chunk):
        self.parts.append(chunk)


_PRELUDE = """
import struct as _struct
from uuid import UUID as _UUID
from protocol.wire import read_uvarint, uvarint, fail, Parts as _Parts, WireError as _WireError, Lenient as _Lenient
from protocol.schema import CLASSES as _CLASSES
_new = object.__new__
_I16 = _struct.Struct('>h')
_I32 = _struct.Struct('>i')
_BYTES = (bytes, bytearray, memoryview)

def _kafka_parse(io, fn):
    data = io.getvalue()
    end = len(data)
    obj, pos = fn(data, io.tell(), end)
    if pos != end and type(io) is not _Lenient:
        raise _WireError('%d bytes left after the last field' % (end - pos))
    io.seek(pos)
    return obj

def _kafka_build(obj, io, fn):
    if type(io) is _Parts:
        fn(obj, io.parts)
    else:
        out = []
        fn(obj, out)
        io.write(b''.join(out))
    return obj
"""


class Body(Construct):
    """A whole message body at one version: a struct that must end the frame."""

    def __init__(self, struct_kind: StructKind):
        super().__init__()
        self.struct = struct_kind

    def _parse(self, stream, context, path):
        obj = self.struct._parse(stream, context, path)
        _ends(stream, path)
        return obj

    def _build(self, obj, stream, context, path):
        return self.struct._build(obj, stream, context, path)

    def _emit(self, code):
        """Emit the module once per compilation, whichever of parse/build asks first."""
        names = getattr(code, "kafka_names", None)
        if names is None:
            g = Emitter()
            names = code.kafka_names = self.struct._function_names(g)
            code.append(_PRELUDE)
            code.append(g.source())
            # the body's own functions, for callers that hold bytes rather than a stream
            code.append(f"body_decoder, body_encoder = {names[0]}, {names[1]}")
        return names

    def _emitparse(self, code):
        dec, _ = self._emit(code)
        return f"_kafka_parse(io, {dec})"

    def _emitbuild(self, code):
        _, enc = self._emit(code)
        return f"_kafka_build(obj, io, {enc})"
