"""Declare each Kafka message once; derive every version's codec from that declaration.

A declaration mirrors Kafka's message JSON (field names in snake_case, Kafka's
type strings, version ranges such as ``"3+"``, ``"1-4"`` or ``"none"``), so a
test can hold every declaration against Kafka's own definitions. From it come:

* one frozen, slotted dataclass per struct, holding the fields of *all*
  versions, each defaulting to Kafka's default, made on first use (``Message.cls``, a
  nested struct's class attribute, or a codec that needs it): making a dataclass costs
  about a millisecond, and a process uses a fraction of the ~190 there are;
* for each version on demand, a :class:`protocol.wire.Body` construct and its
  ``.compile()``-d form, cached per (message, version).

Declaring a message is cheap (no class, no codec), so importing ``protocol.messages`` is.
"""

from __future__ import annotations

import dataclasses
import io
import struct
import threading
from functools import cached_property

from construct import ConstructError

from .exceptions import DecodeError, EncodeError
from .wire import (ZERO_UUID, Array, Blob, Body, Fixed, Lenient, NullableStruct, Parts, StructKind, Uuid,
                   WireError)

#: Every generated dataclass by "Message.Struct" name; generated code looks classes up here.
CLASSES: dict[str, type] = {}
#: Held while classes are made: worker threads (shards loading their logs) may ask for the same
#: class at once, and a struct must have exactly one class.
_MAKING = threading.RLock()

_FIXED = {"int8": "b", "int16": "h", "uint16": "H", "int32": "i", "int64": "q",
          "float64": "d", "bool": "?"}
_ZERO = {"int8": 0, "int16": 0, "uint16": 0, "int32": 0, "int64": 0, "float64": 0.0,
         "bool": False, "string": "", "bytes": b"", "records": None, "uuid": ZERO_UUID}
_UNSET = object()


def parse_versions(spec: str) -> tuple[int, int] | None:
    """``"3+"`` -> (3, 32767); ``"1-4"`` -> (1, 4); ``"2"`` -> (2, 2); ``"none"`` -> None."""
    if spec == "none":
        return None
    if spec.endswith("+"):
        return int(spec[:-1]), 0x7FFF
    lo, _, hi = spec.partition("-")
    return int(lo), int(hi or lo)


def _within(spec: tuple[int, int] | None, version: int) -> bool:
    return spec is not None and spec[0] <= version <= spec[1]


class F:
    """One field: name, Kafka type string, versions, and Kafka's optional attributes.

    ``fields`` declares the struct of a struct-typed field inline; a struct
    type without ``fields`` refers to the message's ``common`` structs.
    """

    def __init__(self, name: str, type: str, versions: str = "0+", *, nullable: str = "none",
                 default=_UNSET, tag: int | None = None, tagged: str = "none",
                 ignorable: bool = False, fields: list[F] | None = None):
        self.name, self.type, self.versions_spec = name, type, versions
        self.versions = parse_versions(versions)
        self.nullable_spec, self.nullable = nullable, parse_versions(nullable)
        self.tag, self.tagged_spec, self.tagged = tag, tagged, parse_versions(tagged)
        self.ignorable, self.fields, self.explicit_default = ignorable, fields, default

    @property
    def element_type(self) -> str:
        return self.type[2:] if self.type.startswith("[]") else self.type

    @property
    def is_struct(self) -> bool:
        return self.element_type not in _FIXED and self.element_type not in _ZERO


class Message:
    """A request, a response, or a versioned data payload (``kind="data"``)."""

    def __init__(self, name: str, api_key: int | None, kind: str, valid: str, flexible: str,
                 fields: list[F], common: dict[str, list[F]] | None = None):
        self.name, self.api_key, self.kind = name, api_key, kind
        self.valid_spec, self.flexible_spec = valid, flexible
        self.valid, self.flexible = parse_versions(valid), parse_versions(flexible)
        self.fields, self.common = fields, common or {}
        self._codecs: dict[int, Codec] = {}
        self._classes: dict[str, type] = {}
        self._structs: dict[str, list[F]] | None = None

    @cached_property
    def cls(self) -> type:
        """The message's class (all versions), made on first use; an attribute from then on."""
        return self.class_of(self.name)

    @property
    def min_version(self) -> int:
        return self.valid[0]

    @property
    def max_version(self) -> int:
        return self.valid[1]

    def is_flexible(self, version: int) -> bool:
        return _within(self.flexible, version)

    def struct_fields(self, f: F) -> list[F]:
        return f.fields if f.fields is not None else self.common[f.element_type]

    # classes ---------------------------------------------------------------------------
    def _make_class(self, struct_name: str, fields: list[F]) -> type:
        """One class per struct name per message, however often the struct is used. The
        classes of nested structs are made with it only when its defaults need an instance;
        the others are class attributes that make theirs when first read. Called with
        ``_MAKING`` held (by :meth:`class_of`)."""
        if struct_name in self._classes:
            return self._classes[struct_name]
        key = self.name if struct_name == self.name else f"{self.name}.{struct_name}"
        nested = {}
        spec = []
        for f in fields:
            if f.is_struct and f.element_type not in nested and self._default_needs_class(f):
                nested[f.element_type] = self.class_of(f.element_type)
            default = self.default_of(f, nested)
            spec.append((f.name, object, dataclasses.field(default=default)))
        cls = dataclasses.make_dataclass(struct_name, spec, frozen=True, slots=True,
                                         namespace={"__doc__": f"Kafka {key} (all versions)."})
        cls.__qualname__ = key
        cls.__module__ = "protocol.messages"
        for f in fields:
            if f.is_struct:
                sub = nested.get(f.element_type) or self._classes.get(f.element_type)
                setattr(cls, f.element_type, sub or _NestedClass(self, f.element_type))
        CLASSES[key] = self._classes[struct_name] = cls
        return cls

    @staticmethod
    def _default_needs_class(f: F) -> bool:
        """A struct field (not an array) that is not nullable defaults to an instance."""
        return (f.explicit_default is _UNSET and not f.type.startswith("[]")
                and f.nullable is None)

    def default_of(self, f: F, nested: dict[str, type] | None = None):
        if f.explicit_default is not _UNSET:
            return f.explicit_default
        if f.type.startswith("[]"):
            return ()
        if f.is_struct:
            return None if f.nullable is not None else (nested or self._classes)[f.type]()
        return _ZERO[f.type]

    def class_of(self, struct_name: str) -> type:
        """The class of the message itself or of one of its structs, made on first use."""
        cls = self._classes.get(struct_name)
        if cls is None:
            with _MAKING:
                if self._structs is None:
                    structs = {self.name: self.fields}
                    self._find_structs(self.fields, structs)
                    self._structs = structs
                cls = self._make_class(struct_name, self._structs[struct_name])
        return cls

    def _find_structs(self, fields: list[F], structs: dict[str, list[F]]) -> None:
        """Struct name -> its fields, depth first: the first declaration of a name makes its
        class, as when every class was made eagerly."""
        for f in fields:
            if f.is_struct and f.element_type not in structs:
                structs[f.element_type] = self.struct_fields(f)
                self._find_structs(structs[f.element_type], structs)

    # codecs ----------------------------------------------------------------------------
    def codec(self, version: int) -> Codec:
        """The codec of one version, built and compiled on first use."""
        c = self._codecs.get(version)
        if c is None:
            if not _within(self.valid, version):
                raise EncodeError(f"{self.name} has no version {version} "
                                  f"(valid {self.valid_spec})")
            c = self._codecs[version] = Codec(self, version)
        return c

    def _kind(self, f: F, version: int, flexible: bool, class_name: str | None = None):
        nullable = _within(f.nullable, version)
        element = f.element_type
        if f.type.startswith("[]"):
            inner = self._kind_of(element, f, version, flexible, nullable=False)
            return Array(inner, nullable, flexible)
        return self._kind_of(element, f, version, flexible, nullable)

    def _kind_of(self, type_name: str, f: F, version: int, flexible: bool, nullable: bool):
        if type_name in _FIXED:
            return Fixed(_FIXED[type_name], type_name)
        if type_name == "uuid":
            return Uuid()
        if type_name in ("string", "bytes", "records"):
            return Blob(type_name == "string", nullable, flexible, short=type_name == "string")
        kind = self.struct_kind(type_name, self.struct_fields(f), version, flexible)
        return NullableStruct(kind) if nullable else kind

    def struct_kind(self, struct_name: str, fields: list[F], version: int, flexible: bool):
        cls = self.class_of(struct_name)
        key = self.name if struct_name == self.name else f"{self.name}.{struct_name}"
        specs = []
        for f in fields:
            default = getattr(cls.__dataclass_fields__[f.name], "default")
            present = _within(f.versions, version)
            tag = f.tag if flexible and _within(f.tagged, version) else None
            if f.tagged is not None and tag is None:
                present = False      # a tagged-only field has no place in a non-flexible version
            kind = self._kind(f, version, flexible) if present else None
            specs.append(_spec(f, kind, present, default, tag, self))
        return StructKind(cls, f"_CLASSES[{key!r}]", specs, flexible)


class _NestedClass:
    """A struct's class as an attribute of its parent's class (``Parent.Child``), made
    when first read; the class then replaces this attribute."""

    def __init__(self, message: Message, struct_name: str):
        self.message, self.struct_name = message, struct_name

    def __get__(self, obj, owner):
        cls = self.message.class_of(self.struct_name)
        setattr(owner, self.struct_name, cls)
        return cls


def _default_src(value, f: F, msg: Message) -> str:
    if value is ZERO_UUID:
        return "_UUID(int=0)"
    if dataclasses.is_dataclass(value):
        return f"_CLASSES[{msg.name + '.' + f.element_type!r}]()"
    return repr(value)


def _spec(f: F, kind, present, default, tag, msg):
    from .wire import FieldSpec
    return FieldSpec(f.name, kind, present, default, _default_src(default, f, msg),
                     strict=not f.ignorable, tag=tag)


_DECODE_ERRORS = (ConstructError, struct.error, UnicodeDecodeError, IndexError, ValueError,
                  OverflowError, TypeError)
_ENCODE_ERRORS = (ConstructError, struct.error, UnicodeEncodeError, AttributeError, TypeError,
                  ValueError, OverflowError)


class Codec:
    """One message at one version: interpreted ``body`` and its compiled twin."""

    def __init__(self, message: Message, version: int):
        self.message, self.version = message, version
        flexible = message.is_flexible(version)
        self.body = Body(message.struct_kind(message.name, message.fields, version, flexible))
        self.compiled = self.body.compile()
        generated = self.compiled.parsefunc.__globals__   # (data, pos, end) -> (obj, pos); (obj, parts)
        self._decode_body, self._encode_body = generated["body_decoder"], generated["body_encoder"]
        self._last: tuple | None = None          # (the last body encoded, its bytes)

    def decode(self, data: bytes, pos: int = 0, *, lenient: bool = False):
        """Decode ``data[pos:]``, which must hold exactly one body; ``lenient`` ignores bytes
        after the last field, as Kafka's broker does for requests."""
        try:
            obj, end = self._decode_body(data, pos, len(data))
            if end != len(data) and not lenient:
                raise WireError(f"{len(data) - end} bytes left after the last field")
            return obj
        except _DECODE_ERRORS as e:
            raise self._explain(data, pos, e, lenient) from None

    def decode_interpreted(self, data: bytes, pos: int = 0, *, lenient: bool = False):
        stream = (Lenient if lenient else io.BytesIO)(data)
        stream.seek(pos)
        try:
            return self.body._parse(stream, None, self.message.name)
        except _DECODE_ERRORS as e:
            raise self._error(e) from None

    def decode_prefix(self, data: bytes, pos: int = 0):
        """Decode a body that newer, unknown fields may follow (versioned payloads only)."""
        stream = io.BytesIO(data)
        stream.seek(pos)
        try:
            return self.body.struct._parse(stream, None, self.message.name)
        except _DECODE_ERRORS as e:
            raise self._error(e) from None

    def encode(self, obj) -> bytes:
        out = Parts()
        self._encode_into(obj, out)
        return b"".join(out.parts)

    def encode_parts(self, obj) -> list:
        """The body as a list of chunks; ``bytes``/``records`` values are never copied. The
        same answer object sent again (Heartbeat's answers are shared) is encoded once."""
        last = self._last
        if last is not None and last[0] is obj:
            return [last[1]]
        out = Parts()
        self._encode_into(obj, out)
        if len(out.parts) == 1:                 # no record data: small, and safe to keep
            self._last = (obj, out.parts[0])
        return out.parts

    def encode_interpreted(self, obj) -> bytes:
        stream = io.BytesIO()
        self._check_type(obj)
        try:
            self.body._build(obj, stream, None, self.message.name)
        except _ENCODE_ERRORS as e:
            raise EncodeError(f"{self.message.name} v{self.version}: {e}") from None
        return stream.getvalue()

    def _encode_into(self, obj, out: Parts):
        self._check_type(obj)
        try:
            self._encode_body(obj, out.parts)
        except _ENCODE_ERRORS as e:
            try:                                   # the interpreted pass names the field
                self.body._build(obj, io.BytesIO(), None, self.message.name)
            except _ENCODE_ERRORS as precise:
                e = precise
            raise EncodeError(f"{self.message.name} v{self.version}: {e}") from None

    def _check_type(self, obj):
        if type(obj) is not self.message.cls:
            raise EncodeError(f"expected {self.message.name}, got {type(obj).__name__}")

    def _explain(self, data, pos, compiled_error, lenient: bool) -> DecodeError:
        """Compiled code stays lean; on failure the interpreted pass finds the field."""
        try:
            self.decode_interpreted(data, pos, lenient=lenient)
        except DecodeError as precise:
            return precise
        return self._error(compiled_error)

    def _error(self, e) -> DecodeError:
        text = str(e)
        field = None
        if isinstance(e, WireError) and " at " in text:
            field = text.rsplit(" at ", 1)[1].split(":")[0]
        elif isinstance(e, ConstructError) and getattr(e, "path", None):
            field = e.path
        return DecodeError(text.split("\n")[0] or type(e).__name__, api=self.message.name,
                           version=self.version, field=field)
