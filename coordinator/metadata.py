"""The topics as the coordinator sees them (Kafka's MetadataImage, reduced to what groups use).

The broker hands each shard a new image whenever topics are created, deleted or grow; the
coordinator never asks the topic store itself. Consumer groups subscribe by topic name and
are assigned by topic id and partition count.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from functools import cached_property
from typing import Mapping


@dataclass(frozen=True, slots=True)
class TopicImage:
    name: str
    topic_id: uuid.UUID
    num_partitions: int


@dataclass(frozen=True)
class MetadataImage:
    """``version`` grows with every change (what a resolved regex records it was matched on)."""
    topics: Mapping[str, TopicImage] = field(default_factory=dict)
    version: int = 0

    @cached_property
    def by_id(self) -> dict[uuid.UUID, TopicImage]:
        return {t.topic_id: t for t in self.topics.values()}

    def changed_topics(self, older: MetadataImage) -> set[str]:
        """Names created, deleted or changed between ``older`` and this image."""
        names = set(self.topics) | set(older.topics)
        return {n for n in names if self.topics.get(n) != older.topics.get(n)}


EMPTY_IMAGE = MetadataImage()
