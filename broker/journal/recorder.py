"""The broker's side of the group event journal (offsets_log/journal.py, coordinator/events.py).

The shard runners hand it the coordinator's :class:`coordinator.actions.Journal` actions and
every group-API error they answer; a periodic task samples every partition's log-end offset.
Each becomes one JSON line: ``t`` (wall-clock ms), ``event``, and where they apply ``shard``,
``group``, ``generation`` (the group's current one), ``member``, then the event's own fields.

Commits are the one frequent event, so they are merged as Burrow's ``min-distance`` merges
them: the commits of one member within ``groupbroker.journal.commit.interval.ms`` (default 1 s;
0 writes every commit) become one ``offsets_committed`` line, at the time of the last, with
the last offset of each partition and ``commits``, how many were merged. A commit then costs
an append to a list; the line is built once per member and interval.

Everything runs in the trio thread: an event is a buffered append; the buffer is written
every interval (at most a second) or when full.
"""

from __future__ import annotations

import logging
import time
from itertools import groupby
from json.encoder import encode_basestring_ascii as _string
from operator import attrgetter

import trio

from coordinator.actions import Journal
from coordinator.events import Event
from offsets_log.journal import JournalWriter, journal_dir

from topic_log import TopicStore

from broker.config import BrokerConfig

log = logging.getLogger("groupbroker.journal")

FLUSH_INTERVAL_S = 1.0


class BrokerJournal:
    def __init__(self, config: BrokerConfig, wall_clock=time.time):
        self._clock = wall_clock
        self.sample_s = config.journal_sample_ms / 1000
        self.commit_interval_s = config.journal_commit_interval_ms / 1000
        self.store: TopicStore | None = None        # set once the data plane exists
        self._commits: dict[tuple[str, str | None], list[Journal]] = {}   # (group, member) -> waiting
        self.writer = JournalWriter(journal_dir(config.data_dir), self.now_ms(),
                                    segment_bytes=config.journal_segment_bytes,
                                    segment_ms=config.journal_segment_ms,
                                    retention_ms=config.journal_retention_ms)
        self.writer.append({"t": self.now_ms(), "event": Event.JOURNAL_OPENED,
                            "node": config.node_id})

    def now_ms(self) -> int:
        return int(self._clock() * 1000)

    def record(self, action: Journal) -> None:
        """One coordinator event."""
        if action.event == Event.OFFSETS_COMMITTED:
            waiting = self._commits.get((action.group, action.member))
            if waiting is None:
                self._commits[(action.group, action.member)] = [action]
            else:
                waiting.append(action)
            if not self.commit_interval_s:
                self.write_commits()
            return
        event = {"t": action.time, "shard": action.shard, "event": action.event,
                 "group": action.group, "generation": action.generation, "member": action.member}
        event.update(action.details)
        self.writer.append(event)

    def write_commits(self) -> None:
        """One ``offsets_committed`` line per member with commits waiting."""
        waiting, self._commits = self._commits, {}
        for actions in waiting.values():
            last = actions[-1]
            if len(actions) == 1:
                offsets = last.details["offsets"]
            else:                                    # the last offset of every partition
                offsets = list({(c.topic, c.partition): c for a in actions
                                for c in a.details["offsets"]}.values())
            member = "null" if last.member is None else _string(last.member)
            self.writer.append_body(
                f'{{"t":{last.time},"shard":{last.shard},"event":"offsets_committed",'
                f'"group":{_string(last.group)},"generation":{last.generation},"member":{member},'
                f'"generation_sent":{last.details["generation_sent"]},"commits":{len(actions)},'
                f'"offsets":[{_offsets(offsets)}]', last.time)

    def error(self, shard, now: int, ticket) -> None:
        """A group-API error answered to a member (``ticket.error``), with the generation it
        sent and the group's current one (None where there is none)."""
        group_id, api, member, sent, error = ticket.error
        group = shard.groups.get(group_id)
        self.writer.append({"t": now, "shard": shard.shard_id, "event": Event.ERROR,
                            "group": group_id, "generation": None if group is None else group.generation,
                            "member": member or getattr(ticket.response, "member_id", None) or None,
                            "api": api, "error": error.name, "generation_sent": sent})

    def share(self, event: dict) -> None:
        """One share-group line (broker/data/share_fetch.py)."""
        self.writer.append({"t": self.now_ms(), **event})

    def topics_deleted(self, topics) -> None:
        """One ``topic_deleted`` line per deleted topic (the report forgets its partitions)."""
        now = self.now_ms()
        for topic in sorted(topics):
            self.writer.append({"t": now, "event": Event.TOPIC_DELETED, "topic": topic})

    def sample(self) -> None:
        """One ``log_end_offset`` line per partition of every topic."""
        if self.store is None:
            return
        now = self.now_ms()
        for topic in self.store.topics():
            for index, plog in enumerate(topic.partitions):
                self.writer.append({"t": now, "event": Event.LOG_END_OFFSET, "topic": topic.name,
                                    "partition": index, "offset": plog.high_watermark,
                                    "log_start": plog.log_start_offset})

    async def run(self, store: TopicStore) -> None:
        """Sample every ``sample_s`` (first at once); write merged commits and the buffer
        every commit interval (at most every second)."""
        self.store = store
        tick = min(self.commit_interval_s or FLUSH_INTERVAL_S, FLUSH_INTERVAL_S)
        next_sample = trio.current_time()
        while True:
            self.write_commits()
            if trio.current_time() >= next_sample:
                self.sample()
                next_sample = trio.current_time() + self.sample_s
            self.writer.flush(self.now_ms())
            await trio.sleep(min(tick, max(next_sample - trio.current_time(), 0)))

    def close(self) -> None:
        """The commits still waiting, a last sample (so the report knows where the logs end
        at shutdown), then write everything."""
        try:
            self.write_commits()
            self.sample()
            self.writer.close()
        except OSError as e:                  # analytics only: never fail a shutdown over it
            log.error("journal: final write failed: %s", e)


_topic = attrgetter("topic")


def _offsets(commits) -> str:
    """``{"topic", "partitions", "offsets"}`` per run of one topic in OffsetCommit records
    (the repr of a list of ints is its JSON)."""
    out = []
    for topic, run in groupby(commits, _topic):
        part = list(run)
        out.append(f'{{"topic":{_string(topic)},"partitions":{[c.partition for c in part]!r},'
                   f'"offsets":{[c.offset for c in part]!r}}}')
    return ",".join(out)
