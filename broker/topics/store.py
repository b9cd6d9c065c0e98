"""All topics under one data directory: create, delete, list, look up, recover on open.

Each partition lives in ``<data-dir>/<topic>-<partition>/`` with a ``partition.metadata`` file
in Kafka's format (``version: 0`` and the base64 ``topic_id``) plus a ``partition_count``
line of ours, so a topic whose creation was cut short by a crash comes back whole. Deleting
renames the directories to ``*.delete`` before removing them, so a crash mid-delete never
resurrects a partial topic. ``__consumer_offsets-*`` belongs to offsets_log and is ignored.
"""

from __future__ import annotations

import base64
import logging
import os
import re
import shutil
import uuid
from dataclasses import dataclass, field
from typing import Any

from .errors import (InvalidPartitions, InvalidTopic, TopicAlreadyExists, UnknownTopicId,
                     UnknownTopicOrPartition)
from .fsutil import atomic_write, fsync_dir
from .partition_log import PartitionLog
from .producer_state import ProducerIds

log = logging.getLogger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"
METADATA_FILE = "partition.metadata"
MAX_NAME_LENGTH = 249
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")
_PARTITION_DIR = re.compile(r"(?P<topic>.+)-(?P<partition>0|[1-9][0-9]*)")
_DELETE_SUFFIX = ".delete"


def validate_topic_name(name: str) -> None:
    """Kafka's Topic.validate: raise InvalidTopic for a name Kafka refuses."""
    if not name:
        raise InvalidTopic("topic name is illegal, it can't be empty")
    if name in (".", ".."):
        raise InvalidTopic("topic name cannot be \".\" or \"..\"")
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidTopic(f"topic name is longer than {MAX_NAME_LENGTH} characters")
    if not _LEGAL.fullmatch(name):
        raise InvalidTopic(f"topic name {name!r} has characters other than ASCII alphanumerics, "
                           "'.', '_' and '-'")


def _collision_key(name: str) -> str:
    """Kafka refuses topics differing only by '.' versus '_' (their metric names collide)."""
    return name.replace(".", "_")


@dataclass
class Topic:
    """A topic and its open partition logs (index = partition number)."""
    name: str
    topic_id: uuid.UUID
    partitions: list[PartitionLog] = field(repr=False)


class TopicStore:
    """The topics of one broker; ``log_config`` is passed to every :class:`PartitionLog`.

    ``producer_ids`` allocates InitProducerId's ids from the same data directory.
    """

    def __init__(self, data_dir: str | os.PathLike[str], *, num_partitions: int = 1,
                 auto_create: bool = True, **log_config: Any) -> None:
        self.data_dir = os.fspath(data_dir)
        self.num_partitions, self.auto_create = num_partitions, auto_create
        self._log_config = log_config
        self._topics: dict[str, Topic] = {}
        os.makedirs(self.data_dir, exist_ok=True)
        self.producer_ids = ProducerIds(self.data_dir)
        self._recover()

    # -- queries ---------------------------------------------------------------------------

    def topics(self) -> list[Topic]:
        return sorted(self._topics.values(), key=lambda t: t.name)

    def topic(self, name: str) -> Topic:
        try:
            return self._topics[name]
        except KeyError:
            raise UnknownTopicOrPartition(f"unknown topic {name!r}") from None

    def topic_by_id(self, topic_id: uuid.UUID) -> Topic:
        for topic in self._topics.values():
            if topic.topic_id == topic_id:
                return topic
        raise UnknownTopicId(f"unknown topic id {topic_id}")

    def partition(self, name: str, partition: int) -> PartitionLog:
        partitions = self.topic(name).partitions
        if not 0 <= partition < len(partitions):
            raise UnknownTopicOrPartition(f"topic {name!r} has no partition {partition}")
        return partitions[partition]

    def get_or_create(self, name: str) -> tuple[Topic, bool]:
        """The topic, auto-created with ``num_partitions`` if allowed; True if just created.

        Metadata and Produce use this; it raises InvalidTopic for an illegal name and
        UnknownTopicOrPartition when auto-creation is off.
        """
        if name in self._topics:
            return self._topics[name], False
        validate_topic_name(name)
        if not self.auto_create:
            raise UnknownTopicOrPartition(f"unknown topic {name!r}")
        return self.create_topic(name, self.num_partitions), True

    # -- changes ---------------------------------------------------------------------------

    def create_topic(self, name: str, partitions: int | None = None, *,
                     validate_only: bool = False) -> Topic:
        """Create a topic (``num_partitions`` when ``partitions`` is None or -1, as Kafka)."""
        validate_topic_name(name)
        count = self.num_partitions if partitions in (None, -1) else partitions
        if name in self._topics or name == OFFSETS_TOPIC:
            raise TopicAlreadyExists(f"topic {name!r} already exists")
        clash = next((t for t in self._topics if _collision_key(t) == _collision_key(name)), None)
        if clash is not None:
            raise InvalidTopic(f"topic {name!r} collides with existing topic {clash!r}")
        if count <= 0:
            raise InvalidPartitions(f"number of partitions must be larger than 0, got {count}")
        if validate_only:
            return Topic(name, uuid.UUID(int=0), [])
        topic_id = uuid.uuid4()
        for p in range(count):
            _write_metadata(self._partition_dir(name, p), topic_id, count)
        fsync_dir(self.data_dir)
        topic = self._open_topic(name, topic_id, count)
        log.info("created topic %s (%s) with %d partition(s)", name, topic_id, count)
        return topic

    def delete_topic(self, name: str) -> Topic:
        """Close and remove every partition of a topic; raises UnknownTopicOrPartition."""
        topic = self.topic(name)
        del self._topics[name]
        for p, plog in enumerate(topic.partitions):
            plog.close()
            src = self._partition_dir(name, p)
            os.replace(src, os.path.join(self.data_dir, f"{topic.topic_id.hex}-{p}{_DELETE_SUFFIX}"))
        fsync_dir(self.data_dir)
        self._remove_deleted()
        log.info("deleted topic %s (%s)", name, topic.topic_id)
        return topic

    def apply_retention(self, now_ms: int) -> int:
        """Run retention on every partition; return the number of segments deleted."""
        return sum(plog.apply_retention(now_ms)
                   for topic in self._topics.values() for plog in topic.partitions)

    def flush(self) -> None:
        for topic in self._topics.values():
            for plog in topic.partitions:
                plog.flush()

    def close(self) -> None:
        for topic in self._topics.values():
            for plog in topic.partitions:
                plog.close()
        self._topics.clear()

    # -- internals -------------------------------------------------------------------------

    def _partition_dir(self, name: str, partition: int) -> str:
        return os.path.join(self.data_dir, f"{name}-{partition}")

    def _open_topic(self, name: str, topic_id: uuid.UUID, count: int) -> Topic:
        logs = [PartitionLog(self._partition_dir(name, p), **self._log_config) for p in range(count)]
        topic = self._topics[name] = Topic(name, topic_id, logs)
        return topic

    def _remove_deleted(self) -> None:
        for entry in os.listdir(self.data_dir):
            if entry.endswith(_DELETE_SUFFIX):
                shutil.rmtree(os.path.join(self.data_dir, entry))

    def _recover(self) -> None:
        """Open every topic found on disk, completing interrupted creates and deletes."""
        self._remove_deleted()
        found: dict[str, dict[int, tuple[uuid.UUID, int] | None]] = {}
        for entry in os.listdir(self.data_dir):
            match = _PARTITION_DIR.fullmatch(entry)
            if not match or not os.path.isdir(os.path.join(self.data_dir, entry)):
                continue
            name, p = match["topic"], int(match["partition"])
            if name == OFFSETS_TOPIC:
                continue
            try:
                validate_topic_name(name)
            except InvalidTopic:
                log.warning("ignoring directory %s: not a legal topic name", entry)
                continue
            found.setdefault(name, {})[p] = _read_metadata(os.path.join(self.data_dir, entry))
        for name, parts in sorted(found.items()):
            self._recover_topic(name, parts)

    def _recover_topic(self, name: str, parts: dict[int, tuple[uuid.UUID, int] | None]) -> None:
        known = [meta for _, meta in sorted(parts.items()) if meta is not None]
        topic_id = known[0][0] if known else uuid.uuid4()
        if any(tid != topic_id for tid, _ in known):
            log.warning("topic %s: partitions disagree on the topic id; keeping %s", name, topic_id)
        count = max([max(parts) + 1, *(c for _, c in known)])
        repaired = [p for p in range(count) if parts.get(p) != (topic_id, count)]
        for p in repaired:
            _write_metadata(self._partition_dir(name, p), topic_id, count)
        if repaired:
            fsync_dir(self.data_dir)
            log.warning("topic %s: rewrote metadata of partition(s) %s", name, repaired)
        self._open_topic(name, topic_id, count)
        log.info("recovered topic %s (%s) with %d partition(s)", name, topic_id, count)


def _write_metadata(directory: str, topic_id: uuid.UUID, count: int) -> None:
    os.makedirs(directory, exist_ok=True)
    encoded = base64.urlsafe_b64encode(topic_id.bytes).rstrip(b"=").decode("ascii")
    atomic_write(os.path.join(directory, METADATA_FILE),
                 f"version: 0\ntopic_id: {encoded}\npartition_count: {count}\n")


def _read_metadata(directory: str) -> tuple[uuid.UUID, int] | None:
    """(topic id, partition count) from partition.metadata, None if missing or unreadable."""
    try:
        with open(os.path.join(directory, METADATA_FILE), encoding="utf-8") as f:
            fields = dict(line.split(": ", 1) for line in f.read().splitlines() if ": " in line)
        topic_id = uuid.UUID(bytes=base64.urlsafe_b64decode(fields["topic_id"] + "=="))
        return topic_id, int(fields.get("partition_count", "0"))
    except (OSError, KeyError, ValueError) as exc:
        log.warning("%s: unreadable %s (%s)", directory, METADATA_FILE, exc)
        return None
