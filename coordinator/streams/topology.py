"""A streams group's topology and how it meets the topics (Kafka's StreamsTopology and
InternalTopicManager.configureTopics).

The topology is stored as its first member sent it. Configuring it against the topics decides
the partition counts of its internal topics (repartition topics from the subtopologies that
write them, copartitioned topics alike, changelogs as their subtopology's sources), the number
of tasks of each subtopology, and which internal topics must still be created; or why the
topology cannot run yet (a Streams status: missing source topics, incorrectly partitioned
topics, missing internal topics), or why it never can (STREAMS_INVALID_TOPOLOGY).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from protocol.errors import ErrorCode

from coordinator.errors import GroupError
from coordinator.java_order import hash_map_order

# the heartbeat's status codes (StreamsGroupHeartbeatResponse.Status)
STALE_TOPOLOGY, MISSING_SOURCE_TOPICS, INCORRECTLY_PARTITIONED_TOPICS = 0, 1, 2
MISSING_INTERNAL_TOPICS, SHUTDOWN_APPLICATION, ASSIGNMENT_DELAYED = 3, 4, 5


@dataclass(frozen=True, slots=True)
class TopicInfo:
    """An internal topic as the topology declares it: 0 partitions or replication factor means
    decided by the broker."""
    name: str
    partitions: int = 0
    replication_factor: int = 0
    configs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Subtopology:
    subtopology_id: str
    source_topics: tuple[str, ...] = ()
    source_topic_regex: tuple[str, ...] = ()
    changelogs: tuple[TopicInfo, ...] = ()
    repartition_sinks: tuple[str, ...] = ()
    repartition_sources: tuple[TopicInfo, ...] = ()
    #: (source topic indexes, regex indexes, repartition source indexes) per group
    copartition_groups: tuple[tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]], ...] = ()

    @property
    def sources(self) -> tuple[str, ...]:
        """Where its tasks read from: the source topics, then the repartition sources."""
        return self.source_topics + tuple(t.name for t in self.repartition_sources)


@dataclass(frozen=True, slots=True)
class Topology:
    epoch: int
    subtopologies: tuple[Subtopology, ...]

    def by_id(self) -> dict[str, Subtopology]:
        return {s.subtopology_id: s for s in self.subtopologies}

    def required_topics(self) -> list[str]:
        """The topics whose metadata matters (sources, repartition sources, changelogs)."""
        names: dict[str, None] = {}
        for s in self.subtopologies:
            names.update(dict.fromkeys(s.source_topics))
            names.update(dict.fromkeys(t.name for t in s.repartition_sources))
            names.update(dict.fromkeys(t.name for t in s.changelogs))
        return list(names)

    def source_subtopology(self, topic: str) -> str | None:
        """The subtopology reading ``topic`` (an offset commit's topic names its task)."""
        for s in self.subtopologies:
            if topic in s.sources:
                return s.subtopology_id
        return None


def topic_info(t) -> TopicInfo:
    return TopicInfo(t.name, t.partitions, t.replication_factor,
                     tuple((c.key, c.value) for c in t.topic_configs))


def topology_of(value) -> Topology:
    """A request's or record's Topology struct as a :class:`Topology`."""
    return Topology(value.epoch, tuple(Subtopology(
        s.subtopology_id, tuple(s.source_topics), tuple(s.source_topic_regex),
        tuple(topic_info(t) for t in s.state_changelog_topics), tuple(s.repartition_sink_topics),
        tuple(topic_info(t) for t in s.repartition_source_topics),
        tuple((tuple(g.source_topics), tuple(g.source_topic_regex), tuple(g.repartition_source_topics))
              for g in s.copartition_groups))
        for s in value.subtopologies))


@dataclass(frozen=True, slots=True)
class ConfiguredSubtopology:
    number_of_tasks: int
    source_topics: tuple[str, ...]
    repartition_sinks: tuple[str, ...]
    #: internal topics with their decided partition counts
    repartition_sources: tuple[TopicInfo, ...]
    changelogs: tuple[TopicInfo, ...]

    @property
    def stateful(self) -> bool:
        return bool(self.changelogs)


@dataclass(frozen=True, slots=True)
class ConfiguredTopology:
    """``subtopologies`` by id (sorted), None when the topics could not be configured;
    ``status``: (status code, detail) of what keeps it from running; ``to_create``: the internal
    topics missing, by name (in Kafka's order)."""
    epoch: int
    subtopologies: dict[str, ConfiguredSubtopology] | None
    status: tuple[int, str] | None = None
    to_create: dict[str, TopicInfo] = field(default_factory=dict)

    @property
    def ready(self) -> bool:
        return self.status is None


class _TopicProblem(Exception):
    """Kafka's TopicConfigurationException: the topology waits for the topics to change."""

    def __init__(self, status: int, detail: str):
        super().__init__(detail)
        self.status, self.detail = status, detail


def invalid_topology(message: str) -> GroupError:
    return GroupError(ErrorCode.STREAMS_INVALID_TOPOLOGY, message)


def summarize(names) -> str:
    """Kafka's summarizeTopics: at most three names, then how many more."""
    names = list(names)
    if not names:
        return "<none>"
    text = ", ".join(names[:3])
    return text + (f" and {len(names) - 3} additional topics" if len(names) > 3 else "")


def _sorted_map(counts: dict[str, int]) -> str:
    """A Java TreeMap's toString."""
    return "{" + ", ".join(f"{k}={v}" for k, v in sorted(counts.items())) + "}"


def configure(topology: Topology, partitions_of: Callable[[str], int | None]) -> ConfiguredTopology:
    """The topology against the topics (``partitions_of``: a topic's partition count, None if it
    does not exist). Raises GroupError(STREAMS_INVALID_TOPOLOGY) for a topology that can never
    be configured."""
    subtopologies = [topology.by_id()[i] for i in hash_map_order([s.subtopology_id for s in topology.subtopologies])]
    try:
        missing = sorted({t for s in subtopologies for t in s.source_topics if partitions_of(t) is None})
        if missing:
            raise _TopicProblem(MISSING_SOURCE_TOPICS, f"Source topics {summarize(missing)} are missing.")
        decided: dict[str, int] = {}

        def count(topic: str) -> int | None:
            found = partitions_of(topic)
            return found if found is not None else decided.get(topic)
        decided.update(_repartition_counts(subtopologies, count))
        _copartition(subtopologies, count, decided)
        decided.update(_changelog_counts(subtopologies, count))
        configured = {s.subtopology_id: _configured(s, count, decided)
                      for s in sorted(subtopologies, key=lambda s: s.subtopology_id)}
        to_create: dict[str, TopicInfo] = {}
        for s in configured.values():
            for t in (*s.repartition_sources, *s.changelogs):
                to_create[t.name] = t
        for name in topology.required_topics():
            found = partitions_of(name)
            expected = to_create.pop(name, None) if found is not None else None
            if expected is not None and found != expected.partitions:
                raise _TopicProblem(INCORRECTLY_PARTITIONED_TOPICS, f"Existing topic {name} has different number "
                                    f"of partitions: expected {expected.partitions}, found {found}")
        if to_create:
            ordered = {n: to_create[n] for n in hash_map_order(list(to_create))}
            return ConfiguredTopology(topology.epoch, configured, (
                MISSING_INTERNAL_TOPICS, f"Internal topics are missing: {summarize(ordered)}"), ordered)
        return ConfiguredTopology(topology.epoch, configured)
    except _TopicProblem as e:
        return ConfiguredTopology(topology.epoch, None, (e.status, e.detail))


def _repartition_counts(subtopologies: list[Subtopology], count) -> dict[str, int]:
    """Kafka's RepartitionTopics.setup: a repartition topic has as many partitions as the
    widest input of the subtopology writing it (unless the topology fixes its count)."""
    counts = {t.name: t.partitions for s in subtopologies for t in s.repartition_sources if t.partitions}
    while True:
        needed = progress = False
        for s in subtopologies:
            for sink in s.repartition_sinks:
                if sink in counts:
                    continue
                candidates = [counts[t.name] for t in s.repartition_sources if t.name in counts]
                candidates += [c for c in map(count, s.source_topics) if c is not None]
                if candidates:
                    counts[sink] = max(candidates)
                    progress = True
                else:
                    needed = True
        if not needed:
            break
        if not progress:
            raise invalid_topology("Failed to compute number of partitions for all repartition topics. "
                                   "There may be loops in the topology that cannot be resolved.")
    if any(t.name not in counts for s in subtopologies for t in s.repartition_sources):
        raise invalid_topology("Failed to compute number of partitions for all repartition topics, because "
                               "a repartition source topic is never used as a sink topic.")
    return counts


def _known(count, topic: str) -> int:
    found = count(topic)
    if found is None:
        raise RuntimeError(f"Number of partitions is not set for topic: {topic}")
    return found


def _copartition(subtopologies: list[Subtopology], count, decided: dict[str, int]) -> None:
    """Kafka's CopartitionedTopicsEnforcer over every copartition group: the topics of a group
    must have one partition count, which its repartition topics take."""
    fixed = [t.name for s in subtopologies for t in s.repartition_sources if t.partitions]
    flexible = {t.name for s in subtopologies for t in s.repartition_sources if not t.partitions}
    for s in subtopologies:
        for sources, _regex, repartitions in s.copartition_groups:
            group = {s.source_topics[i] for i in sources} | {s.repartition_sources[i].name for i in repartitions}
            if not group:
                continue
            repartition = {t: _known(count, t) for t in group if t in fixed or t in flexible}
            others = {t: _known(count, t) for t in group if t not in repartition}
            if set(repartition) == group:
                if fixed:
                    first = _known(count, fixed[0])
                    if any(_known(count, t) != first for t in fixed):
                        raise _TopicProblem(INCORRECTLY_PARTITIONED_TOPICS, "Following topics do not have the "
                                            f"same number of partitions: [{_sorted_map(repartition)}]")
                    chosen = first
                else:
                    chosen = max(repartition.values(), default=0)
                    if chosen == 0:
                        raise invalid_topology("All topics in the copartition group had undefined partition "
                                               f"number: [{', '.join(repartition)}]")
            else:
                if len(set(others.values())) > 1:
                    raise _TopicProblem(INCORRECTLY_PARTITIONED_TOPICS, "Following topics do not have the same "
                                        f"number of partitions: [{_sorted_map(others)}]")
                chosen = next(iter(others.values()))
            for t, was in repartition.items():
                if t in fixed and was != chosen:
                    raise _TopicProblem(INCORRECTLY_PARTITIONED_TOPICS,
                                        f"Number of partitions [{was}] of repartition topic [{t}] doesn't match "
                                        f"number of partitions [{chosen}] of the source topic.")
                decided[t] = chosen


def _changelog_counts(subtopologies: list[Subtopology], count) -> dict[str, int]:
    """Kafka's ChangelogTopics.setup: a changelog has as many partitions as its subtopology
    has tasks."""
    counts = {}
    for s in subtopologies:
        widths = [_known(count, t) for t in s.sources]
        if not widths:
            raise invalid_topology(f"No source topics found for subtopology {s.subtopology_id}")
        for t in s.changelogs:
            counts[t.name] = max(widths)
    return counts


def _configured(s: Subtopology, count, decided: dict[str, int]) -> ConfiguredSubtopology:
    def internal(t: TopicInfo) -> TopicInfo:
        return TopicInfo(t.name, t.partitions or decided[t.name], t.replication_factor, t.configs)
    return ConfiguredSubtopology(max(_known(count, t) for t in s.sources), s.source_topics, s.repartition_sinks,
                                 tuple(internal(t) for t in s.repartition_sources),
                                 tuple(internal(t) for t in s.changelogs))
