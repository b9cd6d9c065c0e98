"""Kafka's sticky task assignor for streams groups (StickyTaskAssignor), with Java's orders.

Active tasks stay with their previous owner while it is under its fair share, then go to a
previous standby of theirs, then to the least-loaded process (its least-loaded member); standby
tasks (``num.standby.replicas`` per stateful task) likewise, never on a process that already
runs the task. A process's load is its tasks per member. Where loads tie, the result is Java's:
hash-map iteration orders (:class:`~coordinator.java_order.HashTable`) and priority-queue ties
(:class:`~coordinator.java_queue.JavaPriorityQueue`), so a group gets Kafka's assignment.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from coordinator.java_order import HashTable, string_hash
from coordinator.java_queue import JavaPriorityQueue
from coordinator.streams.tasks import TaskSet, TasksTuple, task_set

log = logging.getLogger("groupbroker.coordinator")
Task = tuple[str, int]          # (subtopology id, partition)


class TaskAssignorError(Exception):
    """Kafka's TaskAssignorException."""


@dataclass(frozen=True, slots=True)
class MemberSpec:
    process_id: str
    previous: TasksTuple        # its previous target assignment


class _Process:
    """Kafka's ProcessState: the members of one process and the tasks given to them."""

    def __init__(self, process_id: str):
        self.process_id = process_id
        self.capacity = self.task_count = 0
        self.load = float("inf")
        self.counts = HashTable(string_hash)                 # member -> tasks given
        self.active: dict[str, set[Task]] = {}
        self.standby: dict[str, set[Task]] = {}
        self.tasks: set[Task] = set()
        self._by_load: JavaPriorityQueue | None = None

    def add_member(self, member_id: str) -> None:
        self.counts.put(member_id, 0)
        self.capacity += 1
        self._compute_load()

    def _compute_load(self) -> None:
        self.load = -1 if self.capacity <= 0 else self.task_count / self.capacity

    def _add(self, member_id: str, task: Task, active: bool) -> int:
        self.task_count += 1
        self.tasks.add(task)
        (self.active if active else self.standby).setdefault(member_id, set()).add(task)
        count = self.counts.get(member_id) + 1
        self.counts.put(member_id, count)
        self._compute_load()
        return count

    def add(self, member_id: str, task: Task, active: bool) -> int:
        self._by_load = None          # a member's count changed outside the queue
        return self._add(member_id, task, active)

    def add_to_least_loaded(self, task: Task, active: bool) -> int:
        if not len(self.counts):
            return -1
        if len(self.counts) == 1:
            return self._add(next(iter(self.counts)), task, active)
        if self._by_load is None:
            self._by_load = JavaPriorityQueue(lambda entry: entry[1],
                                              ([m, c] for m, c in self.counts.items()))
        entry = self._by_load.poll()
        entry[1] = self._add(entry[0], task, active)
        self._by_load.add(entry)
        return entry[1]


def _per_member(tasks: int, members: int) -> int:
    return 0 if members == 0 else -(-tasks // members)


class _Assignment:
    def __init__(self, members: HashTable, subtopologies: list[tuple[str, int, bool]], standbys: int):
        self.standbys = standbys
        self.total_active = sum(n for _, n, _ in subtopologies)
        self.total = self.total_active + sum(n * standbys for _, n, stateful in subtopologies if stateful)
        self.with_active_capacity = self.with_capacity = len(members)
        self.active_per_member = _per_member(self.total_active, self.with_active_capacity)
        self.per_member = _per_member(self.total, self.with_capacity)
        self.processes = HashTable(string_hash, len(members))
        self.prev_active: dict[Task, tuple[str, str]] = {}
        self.prev_standby: dict[Task, list[tuple[str, str]]] = {}
        for member_id, spec in members.items():
            process = self.processes.get(spec.process_id)
            if process is None:
                process = _Process(spec.process_id)
                self.processes.put(spec.process_id, process)
            process.add_member(member_id)
            for s, ps in spec.previous.active.items():
                for p in ps:
                    self.prev_active[(s, p)] = (spec.process_id, member_id)
            for s, ps in spec.previous.standby.items():
                for p in ps:
                    self.prev_standby.setdefault((s, p), []).append((spec.process_id, member_id))

    def _active_placed(self, count: int) -> None:
        if count == self.active_per_member:
            self.with_active_capacity -= 1
            self.total_active -= count
            self.active_per_member = _per_member(self.total_active, self.with_active_capacity)
        self._placed(count)

    def _placed(self, count: int) -> None:
        if count == self.per_member:
            self.with_capacity -= 1
            self.total -= count
            self.per_member = _per_member(self.total, self.with_capacity)

    def _least_loaded_previous(self, owners, task: Task | None):
        """Kafka's findPrevMemberWithLeastLoad: the first, replaced only by one whose process
        and own load are both lower (for a standby, not on a process that runs the task)."""
        best = best_process_load = best_member_load = None
        for process_id, member_id in owners or ():
            process = self.processes.get(process_id)
            if task is not None and task in process.tasks:
                continue
            process_load, member_load = process.load, process.counts.get(member_id)
            if best is None or (process_load < best_process_load and member_load < best_member_load):
                best, best_process_load, best_member_load = (process_id, member_id), process_load, member_load
        return best

    def assign_active(self, tasks: list[Task]) -> None:
        tasks.sort(key=lambda t: (t[1], t[0]))
        left = []
        for task in tasks:
            owner = self.prev_active.get(task)
            if owner is not None and self._has_room(owner, self.active_per_member):
                self._active_placed(self.processes.get(owner[0]).add(owner[1], task, True))
            else:
                left.append(task)
        tasks, left = left, []
        for task in tasks:
            owner = self._least_loaded_previous(self.prev_standby.get(task), None)
            if owner is not None and self._has_room(owner, self.active_per_member):
                self._active_placed(self.processes.get(owner[0]).add(owner[1], task, True))
            else:
                left.append(task)
        left.sort()
        queue = JavaPriorityQueue(lambda p: p.load, (p for _, p in self.processes.items()))
        for task in left:
            process = queue.poll()
            if process is None:
                raise TaskAssignorError(f"No process available to assign active task {_name(task)}.")
            count = process.add_to_least_loaded(task, True)
            if count == -1:
                raise TaskAssignorError(f"No member available to assign active task {_name(task)}.")
            self._active_placed(count)
            queue.add(process)

    def _has_room(self, owner: tuple[str, str], quota: int) -> bool:
        return self.processes.get(owner[0]).counts.get(owner[1]) < quota

    def assign_standby(self, tasks: list[Task]) -> None:
        tasks.sort(key=lambda t: (t[1], t[0]), reverse=True)
        to_least_loaded = []
        for task in tasks:
            for i in range(self.standbys):
                owner = self.prev_active.get(task)
                if owner is not None:
                    process = self.processes.get(owner[0])
                    if task not in process.tasks and self._has_room(owner, self.per_member):
                        self._placed(process.add(owner[1], task, False))
                        continue
                owner = self._least_loaded_previous(self.prev_standby.get(task), task)
                if owner is not None and self._has_room(owner, self.per_member):
                    self._placed(self.processes.get(owner[0]).add(owner[1], task, False))
                    continue
                to_least_loaded.append((task, self.standbys - i))
                break
        to_least_loaded.sort(key=lambda entry: entry[0], reverse=True)
        queue = JavaPriorityQueue(lambda p: p.load, (p for _, p in self.processes.items()))
        for task, remaining in to_least_loaded:
            for i in range(remaining):
                if not self._standby_to_least_loaded(queue, task):
                    log.warning("Unable to assign %d of %d standby tasks for task [%s]. There is not enough "
                                "available capacity. You should increase the number of threads and/or "
                                "application instances to maintain the requested number of standby replicas.",
                                self.standbys - i, self.standbys, _name(task))
                    break

    def _standby_to_least_loaded(self, queue: JavaPriorityQueue, task: Task) -> bool:
        process = queue.poll()
        if process is None:
            return False
        found = False
        if task not in process.tasks:
            count = process.add_to_least_loaded(task, False)
            if count != -1:
                found = True
                self._placed(count)
        elif len(queue):
            found = self._standby_to_least_loaded(queue, task)
        queue.add(process)
        return found

    def result(self, member_ids) -> dict[str, TasksTuple]:
        active: dict[str, set[Task]] = {}
        standby: dict[str, set[Task]] = {}
        for _, process in self.processes.items():
            for member_id, tasks in process.active.items():
                active.setdefault(member_id, set()).update(tasks)
            for member_id, tasks in process.standby.items():
                standby.setdefault(member_id, set()).update(tasks)
        return {m: TasksTuple(_grouped(active.get(m, ())), _grouped(standby.get(m, ()))) for m in member_ids}


def _grouped(tasks) -> TaskSet:
    return task_set((s, (p,)) for s, p in tasks)


def _name(task: Task) -> str:
    return f"{task[0]}_{task[1]}"


def assign(members: HashTable, subtopologies: list[tuple[str, int, bool]], standbys: int) -> dict[str, TasksTuple]:
    """Each member's new target. ``members``: member id -> :class:`MemberSpec`, a table in
    the order Kafka's builder filled it; ``subtopologies``: (id, number of tasks, stateful),
    sorted by id; ``standbys``: the group's num.standby.replicas."""
    state = _Assignment(members, subtopologies, standbys)
    state.assign_active([(s, p) for s, n, _ in subtopologies for p in range(n)])
    if standbys > 0:
        state.assign_standby([(s, p) for s, n, stateful in subtopologies if stateful for p in range(n)])
    return state.result(list(members))
