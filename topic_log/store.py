"""All topics under one data directory: create, delete, list, look up, recover on open.

Each partition lives in ``<data-dir>/<topic>-<partition>/`` with a ``partition.metadata`` file
in Kafka's format (``version: 0`` and the base64 ``topic_id``) plus a ``partition_count``
line of ours, so a topic whose creation was cut short by a crash comes back whole (partition
0's metadata is made durable first; directories of a creation cut short before that hold
nothing and are discarded with a log line). Deleting renames the directories to ``*.delete``
before removing them, so a crash mid-delete never resurrects a partial topic. A clean
shutdown leaves Kafka's ``.kafka_cleanshutdown`` marker, and the next start skips recovery.
``__consumer_offsets-*``, ``__transaction_state-*`` and ``__share_group_state-*`` belong to the
coordinators' logs and are ignored.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import re
import shutil
import threading
import uuid
import dataclasses
from dataclasses import dataclass, field
from typing import Any

from coordinator.metadata import EMPTY_IMAGE, MetadataImage, TopicImage
from protocol.uuids import kafka_uuid
from log_store.disk import Disk
from log_store.files import atomic_write, fsync_dir

from .errors import (InvalidPartitions, InvalidTopic, StorageError, TopicAlreadyExists,
                     UnknownTopicOrPartition)
from . import configs as topic_configs
from .partition_log import PartitionLog
from .producer_state import ProducerIds

log = logging.getLogger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"
#: the coordinators' own logs (offsets_log), never topic partitions of the data plane
INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC, "__transaction_state", "__share_group_state"})
METADATA_FILE = "partition.metadata"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"        # Kafka's name for the same marker
MAX_NAME_LENGTH = 249
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")
PARTITION_DIR = re.compile(r"(?P<topic>.+)-(?P<partition>0|[1-9][0-9]*)")
_DELETE_SUFFIX = ".delete"


def validate_topic_name(name: str) -> None:
    """Kafka's Topic.validate: raise InvalidTopic, with Kafka's message, for a name it refuses."""
    reason = None
    if not name:
        reason = "the empty string is not allowed"
    elif name in (".", ".."):
        reason = f"'{name}' is not allowed"
    elif len(name) > MAX_NAME_LENGTH:
        reason = f"the length of '{name}' is longer than the max allowed length {MAX_NAME_LENGTH}"
    elif not _LEGAL.fullmatch(name):
        reason = f"'{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
    if reason is not None:
        raise InvalidTopic(f"Topic name is invalid: {reason}")


def _collision_key(name: str) -> str:
    """Kafka refuses topics differing only by '.' versus '_' (their metric names collide)."""
    return name.replace(".", "_")


@dataclass
class Topic:
    """A topic and its open partition logs (index = partition number); ``configs`` are its
    overrides of the broker's topic defaults (see :mod:`topic_log.configs`)."""
    name: str
    topic_id: uuid.UUID
    partitions: list[PartitionLog] = field(repr=False)
    configs: dict[str, str] = field(default_factory=dict)
    #: the replicas each partition has in a cluster (one copy of the data serves them all)
    replication_factor: int = 1


class TopicStore:
    """The topics of one broker; ``log_config`` is passed to every :class:`PartitionLog`.

    ``producer_ids`` allocates InitProducerId's ids from the same data directory. ``disk``
    carries every topic write (its ``fail``/``heal`` switch injects storage failures).

    Creating a topic may run in a worker thread while the event loop reads the store: the
    topic map is replaced, never changed in place, and one lock guards the names being
    created, so readers never see a half-built topic and need no lock themselves.
    """

    def __init__(self, data_dir: str | os.PathLike[str], *, num_partitions: int = 1,
                 auto_create: bool = True, broker_props: dict[str, str] | None = None,
                 replication_factor: int = 1, **log_config: Any) -> None:
        self.data_dir = os.fspath(data_dir)
        #: the broker's Kafka-named settings behind each topic's defaults; None: the logs keep
        #: ``log_config`` as it is and topic configs are not applied (tools and unit tests)
        self.broker_props = broker_props
        self.num_partitions, self.auto_create = num_partitions, auto_create
        self.replication_factor = replication_factor    # default.replication.factor
        self.disk: Disk = log_config.pop("disk", None) or Disk()
        self._log_config = log_config
        self._topics: dict[str, Topic] = {}
        self._image, self._image_of = EMPTY_IMAGE, None
        self._lock = threading.Lock()
        self._creating: set[str] = set()
        os.makedirs(self.data_dir, exist_ok=True)
        self._recover()
        highest = max((plog.producers.highest_producer_id() for topic in self._topics.values()
                       for plog in topic.partitions), default=-1)
        self.producer_ids = ProducerIds(self.data_dir, highest_in_use=highest)

    # -- queries ---------------------------------------------------------------------------

    def metadata_image(self) -> MetadataImage:
        """The topics as the group coordinator sees them; a new image after every change (the
        topic map is replaced on each change, so comparing it by identity is enough)."""
        topics = self._topics
        image = self._image
        if self._image_of is not topics:
            image = MetadataImage({t.name: TopicImage(t.name, t.topic_id, len(t.partitions))
                                   for t in topics.values()}, image.version + 1)
            self._image, self._image_of = image, topics
        return image

    def topics(self) -> list[Topic]:
        return sorted(self._topics.values(), key=lambda t: t.name)

    def topic(self, name: str) -> Topic:
        try:
            return self._topics[name]
        except KeyError:
            raise UnknownTopicOrPartition(f"unknown topic {name!r}") from None

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

    def partition_count(self, partitions: int | None) -> int:
        """The partitions a CreateTopics entry asks for (``num_partitions`` for None or -1)."""
        return self.num_partitions if partitions in (None, -1) else partitions

    def create_topic(self, name: str, partitions: int | None = None, *,
                     validate_only: bool = False, configs: dict[str, str] | None = None,
                     replication_factor: int | None = None) -> Topic:
        """Create a topic (``num_partitions`` when ``partitions`` is None or -1, and
        ``default.replication.factor`` when ``replication_factor`` is None or -1, as Kafka).

        Safe to call from a worker thread. Only partition 0's metadata is fsynced before the
        topic counts as created: it names the partition count, so start-up recreates any
        other partition a power loss took (raises StorageError if the disk refuses).
        """
        count = self.partition_count(partitions)
        replicas = self.replication_factor if replication_factor in (None, -1) else replication_factor
        with self._lock:
            self._check_creatable(name, count)
            if validate_only:
                return Topic(name, uuid.UUID(int=0), [], dict(configs or {}), replicas)
            self._creating.add(name)
        try:
            topic_id = uuid.uuid4()
            try:
                self._write_topic(name, topic_id, count, configs or {}, replicas)
            except OSError as exc:
                self._discard_partitions(name, range(count))
                raise StorageError(f"creating topic {name!r} failed: {exc}") from exc
            topic = self._configured(Topic(name, topic_id, self._open_logs(name, count, clean_shutdown=True),
                                           dict(configs or {}), replicas))
            with self._lock:
                self._topics = {**self._topics, name: topic}
        finally:
            with self._lock:
                self._creating.discard(name)
        log.info("created topic %s (%s) with %d partition(s)", name, topic_id, count)
        return topic

    def _check_creatable(self, name: str, count: int) -> None:
        validate_topic_name(name)
        if name in self._topics or name in self._creating or name in INTERNAL_TOPICS:
            raise TopicAlreadyExists(f"Topic '{name}' already exists.")
        clash = next((t for t in (*self._topics, *self._creating)
                      if _collision_key(t) == _collision_key(name)), None)
        if clash is not None:
            raise InvalidTopic(f"Topic '{name}' collides with existing topic: {clash}")
        if count <= 0:
            raise InvalidPartitions("Number of partitions was set to an invalid non-positive value.")

    def _write_topic(self, name: str, topic_id: uuid.UUID, count: int, configs: dict[str, str],
                     replicas: int) -> None:
        if configs:                       # before the metadata that makes the topic exist
            _write_configs(self._partition_dir(name, 0), configs)
        _write_metadata(self._partition_dir(name, 0), topic_id, count, durable=True, replicas=replicas)
        fsync_dir(self.data_dir)
        for p in range(1, count):
            _write_metadata(self._partition_dir(name, p), topic_id, count, durable=False, replicas=replicas)
        fsync_dir(self.data_dir)

    def add_partitions(self, name: str, count: int, *, validate_only: bool = False) -> Topic:
        """Raise a topic's partition count to ``count`` (CreatePartitions), as one change.

        Safe to call from a worker thread. The new partitions' directories come first; the
        change counts once partition 0's metadata names the new count (made durable under the
        store lock, with the new topic put in place at once, so a concurrent delete sees every
        partition). A start after a crash before that discards new directories holding neither
        metadata nor data. Raises UnknownTopicOrPartition, InvalidPartitions (Kafka's
        messages) or StorageError.
        """
        topic = self.topic(name)
        current = len(topic.partitions)
        if count == current:
            raise InvalidPartitions(f"Topic already has {current} partition(s).")
        if count < current:
            raise InvalidPartitions(f"The topic {name} currently has {current} partition(s); "
                                    f"{count} would not be an increase.")
        if validate_only:
            return topic
        with self._lock:                  # no topic of this name can be made while it grows
            self._creating.add(name)
        try:
            return self._grow(topic, count)
        finally:
            with self._lock:
                self._creating.discard(name)

    def _grow(self, topic: Topic, count: int) -> Topic:
        name, current = topic.name, len(topic.partitions)
        added = range(current, count)
        try:
            for p in added:
                _write_metadata(self._partition_dir(name, p), topic.topic_id, count, durable=False,
                                replicas=topic.replication_factor)
            fsync_dir(self.data_dir)
            logs = self._open_logs(name, count, clean_shutdown=True, first=current)
        except OSError as exc:
            self._discard_partitions(name, added)
            raise StorageError(f"adding partitions to topic {name!r} failed: {exc}") from exc
        with self._lock:
            if self._topics.get(name) is not topic:
                for plog in logs:
                    plog.close()
                self._discard_partitions(name, added)
                raise UnknownTopicOrPartition(f"topic {name!r} was deleted or changed meanwhile")
            try:
                _write_metadata(self._partition_dir(name, 0), topic.topic_id, count, durable=True,
                                replicas=topic.replication_factor)
            except OSError as exc:
                for plog in logs:
                    plog.close()
                self._discard_partitions(name, added)
                raise StorageError(f"adding partitions to topic {name!r} failed: {exc}") from exc
            grown = self._configured(dataclasses.replace(topic, partitions=[*topic.partitions, *logs]))
            self._topics = {**self._topics, name: grown}
        try:
            for p in range(1, current):   # never recreating a directory a delete just moved away
                _write_metadata(self._partition_dir(name, p), topic.topic_id, count, durable=False,
                                make_dir=False, replicas=topic.replication_factor)
        except OSError as exc:              # partition 0's count decides; start-up repairs the rest
            log.warning("topic %s: partition metadata not all updated (%s); the next start repairs it",
                        name, exc)
        log.info("topic %s (%s): partitions raised from %d to %d", name, topic.topic_id, current, count)
        return grown

    def set_configs(self, name: str, configs: dict[str, str]) -> Topic:
        """Replace a topic's overrides (already validated): durable first, then applied to its
        partitions at once. Safe in a worker thread; raises UnknownTopicOrPartition, StorageError."""
        topic = self.topic(name)
        try:
            _write_configs(self._partition_dir(name, 0), configs)
        except OSError as exc:
            raise StorageError(f"cannot store the configs of topic {name!r}: {exc}") from exc
        with self._lock:
            changed = self._configured(dataclasses.replace(topic, configs=dict(configs)))
            if self._topics.get(name) is topic:
                self._topics = {**self._topics, name: changed}
        log.info("topic %s: configs now %s", name, configs or "the broker's defaults")
        return changed

    def set_broker_props(self, props: dict[str, str]) -> None:
        """New broker settings behind the topic defaults (dynamic ones included): every topic's
        partitions take the values they now give."""
        self.broker_props = props
        for topic in self._topics.values():
            self._configured(topic)

    def _configured(self, topic: Topic) -> Topic:
        """``topic`` with its effective configs handed to each of its partition logs."""
        if self.broker_props is not None:
            values = topic_configs.effective(topic.configs, self.broker_props)
            for plog in topic.partitions:
                topic_configs.apply(plog, values)
        return topic

    def delete_topic(self, name: str) -> Topic:
        """Close and remove every partition of a topic; raises UnknownTopicOrPartition."""
        with self._lock:
            topic = self.topic(name)
            self._topics = {n: t for n, t in self._topics.items() if n != name}
        for p, plog in enumerate(topic.partitions):
            plog.close()
            src = self._partition_dir(name, p)
            os.replace(src, os.path.join(self.data_dir, f"{topic.topic_id.hex}-{p}{_DELETE_SUFFIX}"))
        fsync_dir(self.data_dir)
        self._remove_deleted()
        log.info("deleted topic %s (%s)", name, topic.topic_id)
        return topic

    def apply_retention(self, now_ms: int) -> int:
        """Run retention on every partition; return the number of segments deleted.

        A partition whose files cannot be removed is logged and skipped until the next run.
        """
        deleted = 0
        for topic in self._topics.values():
            for plog in topic.partitions:
                try:
                    deleted += plog.apply_retention(now_ms)
                except (StorageError, UnknownTopicOrPartition) as exc:
                    log.warning("retention skipped %s: %s", plog.directory, exc)
        return deleted

    def flush(self) -> bool:
        """fsync every partition; True if all succeeded (failures are logged)."""
        durable = True
        for topic in self._topics.values():
            for plog in topic.partitions:
                try:
                    plog.flush()
                except (StorageError, UnknownTopicOrPartition) as exc:
                    log.warning("flush of %s failed: %s", plog.directory, exc)
                    durable = False
        return durable

    def close(self) -> None:
        """Close every log; if all are durable, record a clean shutdown (start-up then skips recovery)."""
        durable = True
        for topic in self._topics.values():
            for plog in topic.partitions:
                durable = plog.close() and durable
        self._topics = {}
        if not durable:
            log.warning("not every partition could be flushed: the next start recovers them")
            return
        try:
            atomic_write(os.path.join(self.data_dir, CLEAN_SHUTDOWN_FILE), '{"version":0}\n')
        except OSError as exc:
            log.warning("could not record the clean shutdown: %s", exc)

    # -- internals -------------------------------------------------------------------------

    def _partition_dir(self, name: str, partition: int) -> str:
        return os.path.join(self.data_dir, f"{name}-{partition}")

    def _open_logs(self, name: str, count: int, *, clean_shutdown: bool, first: int = 0) -> list[PartitionLog]:
        return [PartitionLog(self._partition_dir(name, p), clean_shutdown=clean_shutdown,
                             disk=self.disk, **self._log_config) for p in range(first, count)]

    def _discard_partitions(self, name: str, partitions) -> None:
        """Remove what a failed or half-done creation left (best effort: start-up retries)."""
        for p in partitions:
            directory = self._partition_dir(name, p)
            if os.path.isdir(directory):
                try:
                    os.replace(directory, os.path.join(self.data_dir, f"{uuid.uuid4().hex}-{p}{_DELETE_SUFFIX}"))
                except OSError as exc:
                    log.error("could not remove %s: %s", directory, exc)
        with contextlib.suppress(OSError):
            fsync_dir(self.data_dir)
            self._remove_deleted()

    def _remove_deleted(self) -> None:
        for entry in os.listdir(self.data_dir):
            if entry.endswith(_DELETE_SUFFIX):
                shutil.rmtree(os.path.join(self.data_dir, entry), ignore_errors=True)

    def _recover(self) -> None:
        """Open every topic found on disk, completing interrupted creates and deletes.

        With Kafka's clean-shutdown marker present no log is recovered (see PartitionLog);
        the marker is removed before anything is written, so a crash after this start is
        never taken for a clean one.
        """
        self._remove_deleted()
        marker = os.path.join(self.data_dir, CLEAN_SHUTDOWN_FILE)
        clean = os.path.isfile(marker)
        found: dict[str, dict[int, tuple[uuid.UUID, int] | None]] = {}
        for entry in os.listdir(self.data_dir):
            match = PARTITION_DIR.fullmatch(entry)
            if not match or not os.path.isdir(os.path.join(self.data_dir, entry)):
                continue
            name, p = match["topic"], int(match["partition"])
            if name in INTERNAL_TOPICS:
                continue
            try:
                validate_topic_name(name)
            except InvalidTopic:
                log.warning("ignoring directory %s: not a legal topic name", entry)
                continue
            found.setdefault(name, {})[p] = _read_metadata(os.path.join(self.data_dir, entry))
        partitions = sum(len(parts) for parts in found.values())
        if clean:
            log.info("clean shutdown recorded: opening %d partition log(s) without recovery", partitions)
        elif found:
            log.info("no clean shutdown recorded: recovering the active segment of %d partition "
                     "log(s)", partitions)
        for name, parts in sorted(found.items()):
            try:
                self._recover_topic(name, parts, clean)
            except OSError as exc:             # one broken topic must not stop the broker
                log.error("topic %s cannot be recovered and stays closed: %s", name, exc)
        if clean:
            try:
                os.remove(marker)
                fsync_dir(self.data_dir)
            except OSError as exc:
                log.error("cannot remove %s (%s): a crash would be taken for a clean shutdown",
                          marker, exc)

    def _recover_topic(self, name: str, parts: dict[int, tuple[uuid.UUID, int] | None],
                       clean: bool) -> None:
        parts = self._without_cut_short_growth(name, parts)
        known = [meta for _, meta in sorted(parts.items()) if meta is not None]
        if not known and not any(_holds_data(self._partition_dir(name, p)) for p in parts):
            log.warning("topic %s: discarding partition(s) %s of a creation cut short (no "
                        "metadata, no data)", name, sorted(parts))
            self._discard_partitions(name, sorted(parts))
            return
        topic_id = known[0][0] if known else uuid.uuid4()
        if any(tid != topic_id for tid, _ in known):
            log.warning("topic %s: partitions disagree on the topic id; keeping %s", name, topic_id)
        count = max([max(parts) + 1, *(c for _, c in known)])
        replicas = next((r for p in sorted(parts) if (r := _read_replicas(self._partition_dir(name, p)))), 1)
        repaired = [p for p in range(count) if parts.get(p) != (topic_id, count)]
        try:
            for p in repaired:            # partition 0's is what a later recovery starts from
                _write_metadata(self._partition_dir(name, p), topic_id, count, durable=p == 0, replicas=replicas)
            if repaired:
                fsync_dir(self.data_dir)
                log.warning("topic %s: rewrote the metadata of %d partition(s), %d to %d", name,
                            len(repaired), repaired[0], repaired[-1])
        except OSError as exc:
            log.error("topic %s: cannot repair partition metadata: %s", name, exc)
        logs = self._open_logs(name, count, clean_shutdown=clean)
        configs = _read_configs(self._partition_dir(name, 0))
        self._topics = {**self._topics, name: self._configured(Topic(name, topic_id, logs, configs, replicas))}
        log.info("recovered topic %s (%s) with %d partition(s)", name, topic_id, count)


    def _without_cut_short_growth(self, name: str, parts: dict[int, tuple[uuid.UUID, int] | None]
                                  ) -> dict[int, tuple[uuid.UUID, int] | None]:
        """``parts`` less what a CreatePartitions cut short left: directories past partition 0's
        count with neither metadata nor data (removed, with a log line)."""
        first = parts.get(0)
        if first is None:
            return parts
        stray = sorted(p for p, meta in parts.items() if p >= first[1] and meta is None
                       and not _holds_data(self._partition_dir(name, p)))
        if not stray:
            return parts
        log.warning("topic %s: discarding partition(s) %s of a partition increase cut short (no "
                    "metadata, no data)", name, stray)
        self._discard_partitions(name, stray)
        return {p: meta for p, meta in parts.items() if p not in stray}


def _holds_data(directory: str) -> bool:
    """Whether a partition directory has a non-empty segment."""
    try:
        return any(e.name.endswith(".log") and e.stat().st_size > 0 for e in os.scandir(directory))
    except OSError:
        return True                       # unreadable: keep it, never discard data unseen


#: A topic's config overrides, as JSON, beside partition 0's metadata.
CONFIGS_FILE = "topic.configs.json"


def _write_configs(directory: str, configs: dict[str, str]) -> None:
    os.makedirs(directory, exist_ok=True)
    atomic_write(os.path.join(directory, CONFIGS_FILE), json.dumps(configs, sort_keys=True))


def _read_configs(directory: str) -> dict[str, str]:
    """A topic's overrides; {} if it has none, or (with a log line) if the file is unreadable."""
    try:
        with open(os.path.join(directory, CONFIGS_FILE), encoding="utf-8") as f:
            configs = json.load(f)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.error("%s: unreadable %s (%s): the topic takes the broker's defaults", directory,
                  CONFIGS_FILE, exc)
        return {}
    return {str(k): str(v) for k, v in configs.items()} if isinstance(configs, dict) else {}


def _write_metadata(directory: str, topic_id: uuid.UUID, count: int, *, durable: bool,
                    make_dir: bool = True, replicas: int = 1) -> None:
    """Kafka's partition.metadata (version, topic id), plus the topic's partition count and
    replication factor, which Kafka keeps in its controller's metadata log."""
    if make_dir:
        os.makedirs(directory, exist_ok=True)
    atomic_write(os.path.join(directory, METADATA_FILE),
                 f"version: 0\ntopic_id: {kafka_uuid(topic_id)}\npartition_count: {count}\n"
                 f"replication_factor: {replicas}\n", durable=durable)


def _read_replicas(directory: str) -> int | None:
    """The replication factor partition.metadata names (None: none, as written before it was)."""
    try:
        with open(os.path.join(directory, METADATA_FILE), encoding="utf-8") as f:
            fields = dict(line.split(": ", 1) for line in f.read().splitlines() if ": " in line)
        return int(fields["replication_factor"])
    except (OSError, KeyError, ValueError):
        return None


def read_metadata(directory: str) -> tuple[uuid.UUID, int]:
    """(topic id, partition count) from partition.metadata; raises OSError, KeyError or ValueError."""
    with open(os.path.join(directory, METADATA_FILE), encoding="utf-8") as f:
        fields = dict(line.split(": ", 1) for line in f.read().splitlines() if ": " in line)
    topic_id = uuid.UUID(bytes=base64.urlsafe_b64decode(fields["topic_id"] + "=="))
    return topic_id, int(fields.get("partition_count", "0"))


def _read_metadata(directory: str) -> tuple[uuid.UUID, int] | None:
    """(topic id, partition count) from partition.metadata, None if missing or unreadable."""
    try:
        return read_metadata(directory)
    except (OSError, KeyError, ValueError) as exc:
        log.warning("%s: unreadable %s (%s)", directory, METADATA_FILE, exc)
        return None
