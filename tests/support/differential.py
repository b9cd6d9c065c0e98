"""Differential testing: the same requests to groupbroker and to Apache Kafka, answers compared
field by field.

A :class:`Differential` holds one connection to each broker. :meth:`Differential.call` sends a
request to both, decodes both answers with our codecs, normalises them and compares every field;
a difference fails the test with the path of each differing field. Values that legitimately
differ between two brokers are the only ones normalised, by this one list:

* ``ALIASED``: ids a broker generates (member ids, topic ids, producer ids, fetch session ids).
  Each side's distinct values are renamed in order of first appearance (``member#1``,
  ``member#2``...), so the answers must still agree on *which* id appears where. A request may
  carry :class:`Alias` placeholders, which each side replaces with its own value.
* ``IGNORED``: values of the machine or the moment (throttle times, the cluster id, ports,
  wall-clock timestamps, the feature epoch).

Record batches are compared record by record (offset, timestamp, key, value, headers, and the
batch's producer, transactional and control flags); their CRCs and byte layout may differ.

Every comparison made in the run is counted; the session summary prints the count.
"""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass, field

import trio

from tests.support.trio_client import TrioClient
from protocol.api_keys import ApiKey
from protocol.record_batch import records_of
from protocol.records import HEADER

#: field name -> (alias kind, the values that mean "no id"): generated ids, compared by where
#: they appear, not by value
ALIASED = {"member_id": ("member", ("",)), "leader": ("member", ("",)),
           "topic_id": ("topic", (uuid.UUID(int=0),)), "producer_id": ("producer", (-1,)),
           "session_id": ("session", (0,))}
#: fields whose value says nothing about behaviour: the machine's or the moment's
IGNORED = frozenset({"throttle_time_ms", "cluster_id", "port", "finalized_features_epoch",
                     "transaction_start_time_ms", "last_timestamp"})

#: reads Kafka's group and transaction coordinators answer from their last committed state
COORDINATOR_READS = frozenset({ApiKey.DESCRIBE_GROUPS, ApiKey.LIST_GROUPS, ApiKey.OFFSET_FETCH,
                               ApiKey.CONSUMER_GROUP_DESCRIBE, ApiKey.DESCRIBE_TRANSACTIONS,
                               ApiKey.LIST_TRANSACTIONS})
READ_LAG_S = 2.0

COMPARISONS = 0          # made in this run (the session summary prints them, tests/conftest.py)
COMPARED: set[tuple[int, int]] = set()      # the (api key, version) pairs compared


class Alias(str):
    """A request value standing for an id each broker generated: ``Alias("member#1")``."""


class Differs(AssertionError):
    """The two brokers answered differently."""


#: the "answer" of a broker that closed the connection instead of answering
CLOSED = "<connection closed>"


@dataclass
class Side:
    name: str
    client: TrioClient
    port: int = 0
    by_value: dict[tuple[str, object], str] = field(default_factory=dict)
    by_alias: dict[str, object] = field(default_factory=dict)

    def alias(self, kind: str, value) -> str:
        key = (kind, value)
        if key not in self.by_value:
            name = f"{kind}#{sum(1 for k, _ in self.by_value if k == kind) + 1}"
            self.by_value[key], self.by_alias[name] = name, value
        return self.by_value[key]

    def resolve(self, value):
        """A request with every :class:`Alias` replaced by this side's value."""
        if isinstance(value, Alias):
            if value not in self.by_alias:
                raise KeyError(f"{self.name} has seen no {value}")
            return self.by_alias[value]
        if dataclasses.is_dataclass(value):
            return dataclasses.replace(value, **{f.name: self.resolve(getattr(value, f.name))
                                                  for f in dataclasses.fields(value)})
        if isinstance(value, tuple):
            return tuple(self.resolve(v) for v in value)
        return value

    def peek(self, value, unordered=()):
        """:meth:`normalise` without naming new ids for good (for answers about to be asked again)."""
        by_value, by_alias = dict(self.by_value), dict(self.by_alias)
        try:
            return self.normalise(value, unordered=unordered)
        finally:
            self.by_value, self.by_alias = by_value, by_alias

    def normalise(self, value, name: str = "", unordered=()):
        """The answer as plain data, with generated ids aliased and ignored values blanked. The
        elements of an ``unordered`` list are aliased in an order both brokers agree on (by
        their content but for ids), so that ids seen there first get the same names."""
        if name in IGNORED:
            return "<ignored>"
        if name in ALIASED and value is not None and value not in ALIASED[name][1] \
                and isinstance(value, str | int | uuid.UUID):
            return self.alias(ALIASED[name][0], value)
        if name == "records" and isinstance(value, bytes | bytearray | memoryview):
            return self.records(bytes(value))
        if dataclasses.is_dataclass(value):
            return {f.name: self.normalise(getattr(value, f.name), f.name, unordered) for f in dataclasses.fields(value)}
        if isinstance(value, tuple | list):
            items = sorted(value, key=lambda v: repr(_without_ids(v))) if name in unordered else value
            return [self.normalise(v, name, unordered) for v in items]
        return value

    def records(self, data: bytes) -> list:
        """Each whole batch's records and flags (a partial batch at the end, which a fetch may
        return when it reaches its byte limit, is left out)."""
        out, pos = [], 0
        while len(data) - pos >= HEADER.size:
            length = int.from_bytes(data[pos + 8:pos + 12], "big", signed=True)
            end = pos + 12 + length
            if end > len(data):
                break
            header, records = records_of(data[pos:end])
            out.append({"base_offset": header.base_offset,
                        "producer": self.normalise(header.producer_id, "producer_id"),
                        "producer_epoch": header.producer_epoch, "transactional": header.is_transactional,
                        "control": header.is_control, "records": [dataclasses.asdict(r) for r in records]})
            pos = end
        return out


class Differential:
    """One connection to groupbroker (``ours``) and one to Kafka (``kafka``)."""

    def __init__(self, ours: Side, kafka: Side, timeout: float = 15.0):
        self.ours, self.kafka, self.timeout = ours, kafka, timeout
        self.sides = (ours, kafka)

    @classmethod
    async def open(cls, ours_port: int, kafka_port: int, client_id: str = "oracle") -> Differential:
        return cls(Side("groupbroker", await TrioClient.connect(ours_port, client_id=client_id), ours_port),
                   Side("kafka", await TrioClient.connect(kafka_port, client_id=client_id), kafka_port))

    async def aclose(self) -> None:
        for side in self.sides:
            await side.client.aclose()

    async def both(self, api_key: int, version: int, body) -> tuple[object, object]:
        """Each broker's decoded answer to ``body`` (Aliases resolved per side), not compared."""
        answers = [None, None]

        async def ask(i: int, side: Side) -> None:
            try:
                answers[i] = await side.client.call(api_key, version, side.resolve(body))
            except ConnectionError:            # closing is an answer too: compared, then reconnected
                answers[i] = CLOSED
                client_id = side.client.session.client_id
                await side.client.aclose()
                side.client = await TrioClient.connect(side.port, client_id=client_id)

        with trio.move_on_after(self.timeout):
            async with trio.open_nursery() as nursery:
                for i, side in enumerate(self.sides):
                    nursery.start_soon(ask, i, side)
        if None in answers:
            silent = " and ".join(side.name for side, a in zip(self.sides, answers) if a is None)
            raise Differs(f"{ApiKey(api_key).name} v{version}: {silent} did not answer within "
                          f"{self.timeout} s; answers: {answers}")
        return answers[0], answers[1]

    async def call(self, api_key: int, version: int, body, *, what: str = "", unordered=()) -> dict:
        """Send ``body`` to both, compare the answers; the normalised answer. A coordinator read
        that differs is asked again for up to ``READ_LAG_S``: Kafka's coordinators answer reads
        from their last committed state, which trails a write answered a moment before."""
        deadline = trio.current_time() + READ_LAG_S
        while True:
            ours, kafka = await self.both(api_key, version, body)
            if api_key not in COORDINATOR_READS or trio.current_time() > deadline or not diff(
                    *(sort_lists(side.peek(a, unordered), unordered) for side, a in zip(self.sides, (ours, kafka)))):
                return self.compare(api_key, version, ours, kafka, what=what, unordered=unordered)
            await trio.sleep(0.05)

    def compare(self, api_key: int, version: int, ours, kafka, *, what: str = "", unordered=()) -> dict:
        """``unordered`` names the lists whose order is Kafka's hash tables' and not behaviour
        (each use says why); they are compared as sorted."""
        global COMPARISONS
        COMPARISONS += 1
        COMPARED.add((api_key, version))
        mine, theirs = self.ours.normalise(ours, unordered=unordered), self.kafka.normalise(kafka, unordered=unordered)
        if unordered:
            mine, theirs = sort_lists(mine, unordered), sort_lists(theirs, unordered)
        differences = diff(mine, theirs)
        if differences:
            title = f"{ApiKey(api_key).name} v{version}" + (f" ({what})" if what else "")
            raise Differs(f"{title}: groupbroker and Kafka differ\n" + "\n".join(differences[:40])
                          + f"\n--- groupbroker: {ours}\n--- kafka:       {kafka}")
        return theirs

    async def raw(self, data_for: callable) -> tuple[bytes | None, bytes | None]:
        """Send hand-made bytes (``data_for(correlation_id)``) to both; each one's response frame,
        or None where the broker closed the connection."""
        frames = []
        for side in self.sides:
            await side.client.send_raw(data_for(1 << 30))
            with trio.fail_after(self.timeout):
                frames.append(await side.client.frame())
        return frames[0], frames[1]


def _without_ids(value):
    """``value`` as plain data with generated ids and ignored fields left out (nothing aliased)."""
    if dataclasses.is_dataclass(value):
        return {f.name: _without_ids(getattr(value, f.name)) for f in dataclasses.fields(value)
                if f.name not in ALIASED and f.name not in IGNORED}
    if isinstance(value, tuple | list):
        return [_without_ids(v) for v in value]
    return value


def sort_lists(tree, names, name: str = ""):
    if isinstance(tree, dict):
        return {k: sort_lists(v, names, k) for k, v in tree.items()}
    if isinstance(tree, list):
        items = [sort_lists(v, names) for v in tree]
        return sorted(items, key=repr) if name in names else items
    return tree


def diff(a, b, path: str = "") -> list[str]:
    """Every path where ``a`` (groupbroker) and ``b`` (Kafka) differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for key in a.keys() | b.keys():
            out += diff(a.get(key, "<absent>"), b.get(key, "<absent>"), f"{path}.{key}")
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path or '.'}: {len(a)} entries != {len(b)} entries\n  ours:  {a}\n  kafka: {b}"]
        return [line for i, (x, y) in enumerate(zip(a, b)) for line in diff(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path or '.'}: groupbroker {a!r} != kafka {b!r}"]
