"""Hypothesis strategies for every declared message, derived from its declaration.

``values_for(msg, version)`` builds an instance of ``msg.cls`` holding a valid
value in every field present at ``version`` and the declared default in every
other field. Presence is worked out here from the ``F`` attributes (Kafka's
rules), not borrowed from the codec under test.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import uuid
from functools import lru_cache
from types import SimpleNamespace

from hypothesis import strategies as st

ZERO_UUID = uuid.UUID(int=0)

INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
}
MAX_ARRAY = 3
MAX_TEXT = 6

# Small strings, biased towards the interesting ones: empty, non-ASCII, multi-byte.
_TEXT = st.one_of(
    st.sampled_from(["", "a", "é", "日本", "\U0001f600", "group-1"]),
    st.text(max_size=MAX_TEXT),
)
_NONEMPTY_TEXT = st.one_of(st.sampled_from(["a", "é", "日本", "\U0001f600"]),
                           st.text(min_size=1, max_size=MAX_TEXT))


def within(spec, version: int) -> bool:
    return spec is not None and spec[0] <= version <= spec[1]


def is_present(msg, f, version: int) -> bool:
    """Whether field ``f`` is on the wire at ``version`` (tagged-only fields need a flexible version)."""
    if not within(f.versions, version):
        return False
    if f.tagged is not None:
        return msg.is_flexible(version) and within(f.tagged, version)
    return True


def is_nullable(f, version: int) -> bool:
    return within(f.nullable, version)


def struct_class(parent_cls: type, f) -> type:
    """The generated dataclass of struct-typed field ``f`` declared in ``parent_cls``."""
    return getattr(parent_cls, f.element_type)


def default_of(cls: type, name: str):
    return cls.__dataclass_fields__[name].default


def values_for(msg, version: int, *, non_default: bool = False) -> st.SearchStrategy:
    """Instances of ``msg.cls`` valid at ``version``; see the module docstring.

    With ``non_default``, every present field differs from its default (arrays
    are never empty, nullable values never null where the default is null), so
    a round trip proves each field travels.
    """
    return _struct_strategy(msg, msg.cls, tuple(msg.fields), version, non_default)


@lru_cache(maxsize=None)
def _struct_strategy(msg, cls, fields, version, non_default):
    parts = {}
    for f in fields:
        if is_present(msg, f, version):
            parts[f.name] = field_strategy(msg, cls, f, version, non_default=non_default)
    return st.fixed_dictionaries(parts).map(lambda kw: cls(**kw))


def field_strategy(msg, parent_cls: type, f, version: int, *, non_default: bool = False):
    """Values of one field at ``version`` (assumed present there)."""
    default = default_of(parent_cls, f.name)
    nullable = is_nullable(f, version)
    element = _element_strategy(msg, parent_cls, f, version, non_default)
    if f.type.startswith("[]"):
        arrays = st.lists(element, min_size=1 if non_default else 0, max_size=MAX_ARRAY).map(tuple)
        return st.one_of(st.none(), arrays) if nullable and not non_default else arrays
    if not non_default:
        return st.one_of(st.none(), element) if nullable else element
    if default is None or f.is_struct:
        return element                   # non-null, and structs recurse with non-default fields
    if nullable:
        element = st.one_of(st.none(), element)
    return element.filter(lambda v, d=default: v != d)


def _element_strategy(msg, parent_cls, f, version, non_default):
    t = f.element_type
    if t in INT_RANGES:
        lo, hi = INT_RANGES[t]
        return st.one_of(st.sampled_from([lo, hi, 0, -1 if lo < 0 else 1]), st.integers(lo, hi))
    if t == "bool":
        return st.booleans()
    if t == "float64":
        return st.floats(allow_nan=False)
    if t == "string":
        return _NONEMPTY_TEXT if non_default and not f.type.startswith("[]") else _TEXT
    if t in ("bytes", "records"):
        return st.binary(min_size=1 if non_default else 0, max_size=8)
    if t == "uuid":
        nonzero = st.uuids().filter(lambda u: u != ZERO_UUID)
        return nonzero if non_default else st.one_of(st.just(ZERO_UUID), nonzero)
    if f.is_struct:
        sub_cls = struct_class(parent_cls, f)
        return _struct_strategy(msg, sub_cls, tuple(msg.struct_fields(f)), version, non_default)
    raise AssertionError(f"{msg.name}.{f.name}: no strategy for type {f.type!r}")


# --- walking declarations ---------------------------------------------------------------

def struct_levels(msg, version: int):
    """Every struct reachable through fields present at ``version``.

    Yields ``(path, cls, fields)`` where ``path`` is a tuple of field names
    leading from the top-level object to the struct (through array elements).
    """
    def walk(path, cls, fields):
        yield path, cls, fields
        for f in fields:
            if f.is_struct and is_present(msg, f, version):
                yield from walk(path + (f.name,), struct_class(cls, f), msg.struct_fields(f))
    yield from walk((), msg.cls, msg.fields)


def replace_at(obj, path: tuple, name: str, value):
    """A copy of ``obj`` with field ``name`` of the struct at ``path`` set to ``value``.

    Each step into an array goes into its first element, which must exist.
    """
    if not path:
        return dataclasses.replace(obj, **{name: value})
    head, rest = path[0], path[1:]
    child = getattr(obj, head)
    if isinstance(child, tuple):
        assert child, f"empty array at {head}"
        child = (replace_at(child[0], rest, name, value),) + child[1:]
    else:
        assert child is not None, f"null struct at {head}"
        child = replace_at(child, rest, name, value)
    return dataclasses.replace(obj, **{head: child})


def declared_messages() -> list:
    """Every ``Message`` declared under protocol.messages: the REQUESTS / RESPONSES / DATA
    tables, plus any declared elsewhere in those modules (at module level, or inside a
    namespace or dict there, e.g. the ``__consumer_offsets`` record schemas)."""
    import protocol.messages as package
    from protocol.messages import DATA, REQUESTS, RESPONSES
    from protocol.schema import Message

    found = {id(m): m for table in (REQUESTS, RESPONSES, DATA) for m in table.values()}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for value in list(vars(module).values()):
            inner = (list(vars(value).values()) if isinstance(value, SimpleNamespace)
                     else list(value.values()) if isinstance(value, dict) else [])
            for m in [value, *inner]:
                if isinstance(m, Message):
                    found.setdefault(id(m), m)
    return sorted(found.values(), key=lambda m: (m.kind != "request", m.kind != "response",
                                                 m.api_key if m.api_key is not None else 0,
                                                 m.name))


def all_cases(messages=None):
    """(message, version) for every declared message and version, in a stable order."""
    return [(msg, v) for msg in (declared_messages() if messages is None else messages)
            for v in range(msg.min_version, msg.max_version + 1)]


def case_id(case) -> str:
    msg, v = case
    return f"{msg.name}-v{v}"
