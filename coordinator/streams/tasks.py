"""A streams member's tasks: per subtopology id, the partitions (task numbers) it runs as
active, standby and warm-up tasks (Kafka's TasksTuple). Maps never hold an empty entry."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Iterable, Mapping

#: subtopology id -> task partitions; never changed in place once built
TaskSet = Mapping[str, frozenset[int]]
NO_TASKS: TaskSet = MappingProxyType({})
KINDS = ("active", "standby", "warmup")


def task_set(pairs: Iterable[tuple[str, Iterable[int]]]) -> TaskSet:
    """A task map from (subtopology id, partitions) pairs, the empty ones left out."""
    out: dict[str, frozenset[int]] = {}
    for subtopology, partitions in pairs:
        merged = out.get(subtopology, frozenset()) | frozenset(partitions)
        if merged:
            out[subtopology] = merged
    return out


def from_wire(task_ids) -> TaskSet:
    """A request's or record's ``[]TaskIds`` as a task map (None stays None: not sent)."""
    if task_ids is None:
        return None
    return task_set((t.subtopology_id, t.partitions) for t in task_ids)


def to_wire(cls, tasks: TaskSet) -> tuple:
    """``[]TaskIds`` sorted by subtopology id, partitions ascending (as Kafka writes them)."""
    return tuple(cls(subtopology_id=s, partitions=tuple(sorted(ps))) for s, ps in sorted(tasks.items()))


def minus(tasks: TaskSet, gone: TaskSet) -> TaskSet:
    return task_set((s, ps - gone.get(s, frozenset())) for s, ps in tasks.items())


def overlaps(a: TaskSet, b: TaskSet) -> bool:
    return any(ps & b.get(s, frozenset()) for s, ps in a.items())


def is_subset(owned: TaskSet | None, assigned: TaskSet) -> bool:
    """Kafka's isSubset: every reported task is assigned (not reported: no)."""
    return owned is not None and all(ps <= assigned.get(s, frozenset()) for s, ps in owned.items())


@dataclass(frozen=True, slots=True)
class TasksTuple:
    active: TaskSet = field(default_factory=dict)
    standby: TaskSet = field(default_factory=dict)
    warmup: TaskSet = field(default_factory=dict)

    def is_empty(self) -> bool:
        return not (self.active or self.standby or self.warmup)

    def overlaps(self, other: TasksTuple) -> bool:
        """Kafka's containsAny: a task of one kind in both."""
        return any(overlaps(getattr(self, k), getattr(other, k)) for k in KINDS)

    def merged(self, other: TasksTuple) -> TasksTuple:
        return TasksTuple(*(task_set([*getattr(self, k).items(), *getattr(other, k).items()]) for k in KINDS))


EMPTY_TASKS = TasksTuple()
