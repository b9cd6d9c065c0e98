"""KIP-1071 streams groups (Kafka's GroupMetadataManager, streams-protocol half).

A Kafka Streams member heartbeats (StreamsGroupHeartbeat) with its topology; the first topology
a group gets is stored and configured against the topics (:mod:`coordinator.streams.topology`),
which may call for internal topics, created by the broker. A change of a member, of the topics
or of the group's standby count bumps the group epoch; a group epoch ahead of the assignment
epoch makes the sticky task assignor compute a new target (not before the initial rebalance
delay of a new group, nor sooner than the assignment interval); then the member takes one step
towards its target (:mod:`coordinator.streams.reconciliation`). Every change is a record,
replayed as recovery replays it. Timers fence members whose session expires or who do not
revoke in time.
"""

from __future__ import annotations

import logging
from typing import Callable, Mapping

from offsets_log.errors import RecordError
from offsets_log.records import GroupMetadataTombstone, GroupRecord, encode_record
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.logtext import safe
from protocol.messages import RESPONSES

from coordinator import responses as r
from coordinator.actions import RequestContext
from coordinator.classic.membership import unstorable
from coordinator.classic.state import GroupState as ClassicState
from coordinator.config import CoordinatorConfig
from coordinator.consumer.group import TopicMetadata
from coordinator.errors import GroupError
from coordinator.events import Event, Expiry
from coordinator.group_configs import bounded_setting, group_setting
from coordinator.java_order import HashTable, hash_set_order, string_hash
from coordinator.metadata import EMPTY_IMAGE, MetadataImage
from coordinator.result import CoordinatorResult
from coordinator.routing import shard_for
from coordinator.share.group import metadata_hash
from coordinator.streams import assignor
from coordinator.streams import records as rec
from coordinator.streams.group import Endpoint, MemberState, StreamsGroup, StreamsMember
from coordinator.streams.reconciliation import reconcile
from coordinator.streams.tasks import EMPTY_TASKS, TasksTuple, from_wire, is_subset, to_wire
from coordinator.streams.validation import LEAVE_GROUP_MEMBER_EPOCH, check_topology_topics, validate_heartbeat
from coordinator.streams.topology import (ASSIGNMENT_DELAYED, MISSING_INTERNAL_TOPICS, SHUTDOWN_APPLICATION,
                                          STALE_TOPOLOGY, ConfiguredTopology, configure, topology_of)
from coordinator.timers import Timers

log = logging.getLogger("groupbroker.coordinator")

E = ErrorCode
HeartbeatResponse = RESPONSES[ApiKey.STREAMS_GROUP_HEARTBEAT].cls
DescribeResponse = RESPONSES[ApiKey.STREAMS_GROUP_DESCRIBE].cls
NEVER = 2**63


def _owned(req) -> TasksTuple | None:
    """The tasks a heartbeat reports, if it sent all three lists."""
    if req.active_tasks is None or req.standby_tasks is None or req.warmup_tasks is None:
        return None
    return TasksTuple(from_wire(req.active_tasks), from_wire(req.standby_tasks), from_wire(req.warmup_tasks))


def _check_epoch(member: StreamsMember, received: int, req) -> None:
    """Kafka's throwIfStreamsGroupMemberEpochIsInvalid."""
    if received == 0:
        return
    if received > member.member_epoch:
        raise GroupError(E.FENCED_MEMBER_EPOCH, f"The streams group member has a greater member epoch ({received}) "
                         f"than the one known by the group coordinator ({member.member_epoch}). The member must "
                         "abandon all its partitions and rejoin.")
    if received < member.member_epoch:
        a = member.assigned
        if received != member.previous_member_epoch or not (
                is_subset(from_wire(req.active_tasks), a.active) and is_subset(from_wire(req.standby_tasks), a.standby)
                and is_subset(from_wire(req.warmup_tasks), a.warmup)):
            raise GroupError(E.FENCED_MEMBER_EPOCH, f"The streams group member has a smaller member epoch "
                             f"({received}) than the one known by the group coordinator ({member.member_epoch}). "
                             "The member must abandon all its partitions and rejoin.")


class StreamsGroupManager:
    def __init__(self, shard_id: int, config: CoordinatorConfig, timers: Timers, classic,
                 other_type: Callable[[str], str | None]):
        self.shard_id, self.config, self.timers = shard_id, config, timers
        self.classic = classic                  # an empty classic group gives way to a streams group
        #: group id -> the type of the live group of another type with that id, if any
        self.other_type = other_type
        self.groups: dict[str, StreamsGroup] = {}
        self.image: MetadataImage = EMPTY_IMAGE
        self.group_configs: Mapping[str, Mapping[str, str]] = {}

    def owns(self, group_id: str) -> bool:
        return shard_for(group_id, self.config.offsets_topic_num_partitions) == self.shard_id

    # --- group configs ------------------------------------------------------------------------
    def heartbeat_interval_ms(self, group_id: str) -> int:
        return bounded_setting(self.group_configs, group_id, self.config, "streams.heartbeat.interval.ms")

    def session_timeout_ms(self, group_id: str) -> int:
        return bounded_setting(self.group_configs, group_id, self.config, "streams.session.timeout.ms")

    def num_standby_replicas(self, group_id: str) -> int:
        c = self.config
        return group_setting(self.group_configs, group_id, "streams.num.standby.replicas",
                             c.group_streams_num_standby_replicas, 0, c.group_streams_max_standby_replicas)

    def initial_rebalance_delay_ms(self, group_id: str) -> int:
        return group_setting(self.group_configs, group_id, "streams.initial.rebalance.delay.ms",
                             self.config.group_streams_initial_rebalance_delay_ms, 0, 2**31 - 1)

    def assignment_interval_ms(self, group_id: str) -> int:
        return bounded_setting(self.group_configs, group_id, self.config, "streams.assignment.interval.ms")

    # --- metadata -----------------------------------------------------------------------------
    def on_metadata(self, image: MetadataImage) -> None:
        """Groups whose topology reads or writes a changed topic configure it again at their
        next heartbeat (Kafka's onMetadataUpdate)."""
        if image is self.image:
            return
        changed = image.changed_topics(self.image)
        self.image = image
        for group in self.groups.values():
            if group.topology is not None and any(t in changed for t in group.topology.required_topics()):
                group.request_metadata_refresh()

    def _partitions_of(self, topic: str) -> int | None:
        found = self.image.topics.get(topic)
        return None if found is None else found.num_partitions

    def _hash(self, topology) -> int:
        """The digest share groups use, over the topology's required topics."""
        topics = self.image.topics
        return metadata_hash({n: TopicMetadata(topics[n].topic_id, n, topics[n].num_partitions)
                              for n in topology.required_topics() if n in topics})

    # --- StreamsGroupHeartbeat ----------------------------------------------------------------
    def heartbeat(self, out: CoordinatorResult, now: int, ctx: RequestContext, req) -> None:
        try:
            check_topology_topics(req)
            if not self.owns(req.group_id):
                raise GroupError(E.NOT_COORDINATOR)
            validate_heartbeat(req)
            if req.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
                response = self._leave(out, now, req)
            else:
                response = self._heartbeat(out, now, ctx, req)
        except GroupError as e:
            response = HeartbeatResponse(error_code=e.code, error_message=e.message)
        except RecordError as e:
            response = HeartbeatResponse(error_code=unstorable(
                ctx, f"group {safe(req.group_id)}: the member's records cannot be stored ({e})"))
        out.reply(ctx.token, ApiKey.STREAMS_GROUP_HEARTBEAT, ctx.version, response)

    def group(self, group_id: str) -> StreamsGroup:
        """Kafka's streamsGroup(groupId)."""
        group = self.groups.get(group_id)
        if group is None:
            if self.other_type(group_id):
                raise GroupError(E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a streams group.")
            raise GroupError(E.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
        return group

    def _group(self, group_id: str, create: bool, records: list) -> StreamsGroup:
        """Kafka's getOrCreateStreamsGroup / getStreamsGroupOrThrow: an empty classic group
        gives way (its tombstone among the records)."""
        group = self.groups.get(group_id)
        if group is not None:
            return group
        other = self.other_type(group_id)
        if create and other == "classic" and self.classic.groups[group_id].is_in(ClassicState.EMPTY):
            records.append(GroupMetadataTombstone(group_id))
            log.info("group %s: converted the empty classic group to a streams group", safe(group_id))
            return StreamsGroup(group_id)
        if other:
            raise GroupError(E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a streams group.")
        if not create:
            raise GroupError(E.GROUP_ID_NOT_FOUND, f"Streams group {group_id} not found.")
        return StreamsGroup(group_id)

    def _heartbeat(self, out: CoordinatorResult, now: int, ctx: RequestContext, req):
        records: list = []
        joining = req.member_epoch == 0
        group_id = req.group_id
        existed = group_id in self.groups
        group = self._group(group_id, joining, records)
        limit = self.config.group_streams_max_size
        if joining and len(group.members) >= limit:
            raise GroupError(E.GROUP_MAX_SIZE_REACHED,
                             f"The streams group has reached its maximum capacity of {limit} members.")
        member_id = req.member_id
        member = group.members.get(member_id)
        if member is None:
            if not joining:
                raise GroupError(E.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")
            member = StreamsMember(member_id)
        _check_epoch(member, req.member_epoch, req)
        updated = member.replace(
            rack_id=req.rack_id if req.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=req.rebalance_timeout_ms if req.rebalance_timeout_ms != -1
            else member.rebalance_timeout_ms,
            topology_epoch=req.topology.epoch if req.topology is not None else member.topology_epoch,
            client_id=ctx.client_id, client_host=ctx.client_host,
            process_id=req.process_id if req.process_id is not None else member.process_id,
            client_tags=tuple(sorted((t.key, t.value) for t in req.client_tags))
            if req.client_tags is not None else member.client_tags,
            user_endpoint=Endpoint(req.user_endpoint.host, req.user_endpoint.port)
            if req.user_endpoint is not None else member.user_endpoint)
        bump = False
        if member_id not in group.members or updated.metadata() != member.metadata():
            records.append(rec.member_metadata(group_id, updated))
            bump = True
            if member_id not in group.members:
                log.info("group %s: member %s joins the streams group", safe(group_id), safe(member_id))
                out.note(now, Event.MEMBER_JOINED, group, member_id, client_id=ctx.client_id,
                         client_host=ctx.client_host, protocol="streams")
        status: list[tuple[int, str]] = []
        had_topology = group.topology is not None
        topology = self._topology(group, req, records)
        if had_topology and updated.topology_epoch < topology.epoch:
            status.append((STALE_TOPOLOGY, f"The member's topology epoch {updated.topology_epoch} is behind the "
                                           f"group's topology epoch {topology.epoch}."))
        configured, digest, bump = self._configured(group, topology, not had_topology, now, bump)
        validated = -1
        if configured.ready:
            validated = topology.epoch
            self._check_owned_tasks(req, configured)
        bump = bump or validated != group.validated_topology_epoch
        configs = {"num.standby.replicas": str(self.num_standby_replicas(group_id))}
        bump = bump or configs != group.last_assignment_configs
        group_epoch = group.group_epoch
        if bump:
            group_epoch += 1
            records.append(rec.group_epoch(group, group_epoch, digest, validated, configs))
            log.info("group %s: group epoch bumped to %d", safe(group_id), group_epoch)
            out.note(now, Event.GROUP_EPOCH_BUMPED, group, member_id, epoch=group_epoch)
            group.metadata_refresh_deadline = NEVER
            group.metadata_refresh_epoch = group_epoch
        delay = self.initial_rebalance_delay_ms(group_id)
        if group.is_empty() and delay > 0 and ("streams-initial-rebalance", group_id) not in self.timers:
            self.timers.schedule(("streams-initial-rebalance", group_id), now + delay,
                                 lambda o, at: self._delayed_assignment(o, at, group_id))
        target_epoch, target = self._target(out, now, group, group_epoch, updated, configured, configs,
                                            records, status)
        reconciled = self._reconcile(out, now, group, updated, target_epoch, target, _owned(req), records)
        tasks_changed = joining or reconciled.held() != member.held()
        self._check_endpoints(group, reconciled, configured, req.endpoint_information_epoch, tasks_changed)
        self.apply(out, records)
        # the soft state goes to the group this request found: a new group's is lost with it (the
        # group the records made starts without), as in Kafka
        group.configured = configured
        self.schedule_session(group_id, member_id, now)
        if req.shutdown_application and group.shutdown_requester is None:
            group.shutdown_requester = member_id
        response = dict(error_code=E.NONE, member_id=member_id, member_epoch=reconciled.member_epoch,
                        heartbeat_interval_ms=self.heartbeat_interval_ms(group_id))
        if tasks_changed:
            ids = HeartbeatResponse.TaskIds
            response.update(active_tasks=to_wire(ids, reconciled.assigned.active),
                            standby_tasks=to_wire(ids, reconciled.assigned.standby),
                            warmup_tasks=to_wire(ids, reconciled.assigned.warmup))
            if reconciled.user_endpoint is not None:
                group.endpoint_information_epoch += 1
        if group.endpoint_information_epoch != req.endpoint_information_epoch:
            response["partitions_by_user_endpoint"] = self._endpoints(group, reconciled)
        response["endpoint_information_epoch"] = group.endpoint_information_epoch if existed else 0
        if configured.status is not None:
            status.append(configured.status)
            if configured.status[0] == MISSING_INTERNAL_TOPICS:
                out.create_topics(ctx.token, {n: (t.partitions, t.replication_factor or -1, dict(t.configs))
                                   for n, t in configured.to_create.items()},
                                  2 * self.heartbeat_interval_ms(group_id))
        if group.shutdown_requester is not None:
            status.append((SHUTDOWN_APPLICATION, f"Streams group member {group.shutdown_requester} encountered a "
                                                 "fatal error and requested a shutdown for the entire application."))
        response["status"] = tuple(HeartbeatResponse.Status(status_code=c, status_detail=d) for c, d in status)
        return HeartbeatResponse(**response)

    def _topology(self, group: StreamsGroup, req, records: list):
        """Kafka's maybeUpdateTopology: the first topology is stored; a different one later is
        refused."""
        if req.topology is None:
            if group.topology is None:
                raise GroupError(E.UNKNOWN_SERVER_ERROR)
            return group.topology
        sent = topology_of(req.topology)
        if group.topology is None:
            records.append(rec.topology(group.group_id, req.topology))
            return sent
        if group.topology.epoch > sent.epoch:
            return group.topology
        if group.topology != sent:
            raise GroupError(E.INVALID_REQUEST, "Topology updates are not supported yet.")
        return group.topology

    def _configured(self, group: StreamsGroup, topology, new_topology: bool, now: int,
                    bump: bool) -> tuple[ConfiguredTopology, int, bool]:
        """The topology configured against the topics (cached on the group until they change),
        the topics' digest, and whether the group epoch must grow."""
        digest = group.metadata_hash
        configured = None if new_topology else group.configured
        if new_topology or configured is None or group.metadata_expired(now):
            digest = self._hash(topology)
            if digest != group.metadata_hash:
                bump, configured = True, None
            if configured is None:
                configured = configure(topology, self._partitions_of)
        return configured, digest, bump

    def _check_owned_tasks(self, req, configured: ConfiguredTopology) -> None:
        """Kafka's throwIfRequestContainsInvalidTasks."""
        for tasks in (req.active_tasks, req.standby_tasks, req.warmup_tasks):
            for t in tasks or ():
                sub = configured.subtopologies.get(t.subtopology_id)
                if sub is None:
                    raise GroupError(E.INVALID_REQUEST,
                                     f"Subtopology {t.subtopology_id} does not exist in the topology.")
                for p in t.partitions:
                    if p < 0 or p >= sub.number_of_tasks:
                        raise GroupError(E.INVALID_REQUEST, f"Task {p} for subtopology {t.subtopology_id} is invalid. "
                                         f"Number of tasks for this subtopology: {sub.number_of_tasks}")

    # --- target assignment ----------------------------------------------------------------------
    def _target(self, out: CoordinatorResult, now: int, group: StreamsGroup, group_epoch: int,
                updated: StreamsMember | None, configured: ConfiguredTopology, configs: dict,
                records: list, status: list) -> tuple[int, TasksTuple]:
        """Kafka's maybeUpdateStreamsTargetAssignment."""
        member_id = updated.member_id if updated is not None else None
        if ("streams-initial-rebalance", group.group_id) in self.timers:
            status.append((ASSIGNMENT_DELAYED, "Assignment delayed due to the configured initial rebalance delay."))
            return group.assignment_epoch, EMPTY_TASKS
        if group.assignment_epoch >= group_epoch:
            return group.assignment_epoch, group.target_of(member_id)
        interval = self.assignment_interval_ms(group.group_id)
        if not (group.assignment_timestamp == 0 or interval == 0 or now >= group.assignment_timestamp + interval):
            status.append((ASSIGNMENT_DELAYED, "Assignment delayed due to the configured assignment interval."))
            return group.assignment_epoch, group.target_of(member_id)
        members = HashTable(string_hash)
        for m in group.members_in_kafka_order():
            members.put(m.member_id, assignor.MemberSpec(m.process_id, group.target_of(m.member_id)))
        if updated is not None:
            members.put(member_id, assignor.MemberSpec(updated.process_id, group.target_of(member_id)))
        if configured.ready:
            subtopologies = [(s, c.number_of_tasks, c.stateful) for s, c in sorted(configured.subtopologies.items())]
            try:
                targets = assignor.assign(members, subtopologies, int(configs.get("num.standby.replicas", "0")))
            except assignor.TaskAssignorError as e:
                log.error("group %s: failed to compute a new target assignment for epoch %d: %s",
                          safe(group.group_id), group_epoch, e)
                raise GroupError(E.UNKNOWN_SERVER_ERROR) from None
        else:
            targets = {m: EMPTY_TASKS for m in members}
        for m, tasks in targets.items():
            if m not in group.target or group.target[m] != tasks:
                records.append(rec.target_member(group.group_id, m, tasks))
        records.append(rec.target_epoch(group.group_id, group_epoch, now))
        log.info("group %s: new target assignment for epoch %d with the sticky task assignor",
                 safe(group.group_id), group_epoch)
        out.note(now, Event.TARGET_ASSIGNMENT, group, member_id, epoch=group_epoch, assignor="sticky",
                 members=sorted(targets), tasks={
                     m: {kind: [f"{s}_{p}" for s, ps in sorted(getattr(t, kind).items()) for p in sorted(ps)]
                         for kind in ("active", "standby")}
                     for m, t in sorted(targets.items())})
        return group_epoch, targets.get(member_id, EMPTY_TASKS)

    def _delayed_assignment(self, out: CoordinatorResult, now: int, group_id: str) -> None:
        """The initial rebalance delay is over: the group's first target (Kafka's
        computeDelayedTargetAssignment)."""
        group = self.groups.get(group_id)
        if group is None or group.is_empty() or group.configured is None:
            return
        records: list = []
        self._target(out, now, group, group.group_epoch, None, group.configured, group.last_assignment_configs,
                     records, [])
        self.apply(out, records)

    def _reconcile(self, out: CoordinatorResult, now: int, group: StreamsGroup, updated: StreamsMember,
                   target_epoch: int, target: TasksTuple, owned: TasksTuple | None,
                   records: list) -> StreamsMember:
        """Kafka's maybeReconcile: the member's next step, its record and its revocation timer."""
        if updated.is_reconciled_to(target_epoch):
            return updated
        reconciled = reconcile(group, updated, target_epoch, target, owned)
        if reconciled != updated:
            records.append(rec.current_assignment(group.group_id, reconciled))
            key = ("streams-rebalance", group.group_id, reconciled.member_id)
            if reconciled.state == MemberState.UNREVOKED_TASKS:
                self._schedule_rebalance_timeout(group.group_id, reconciled, now)
            else:
                self.timers.cancel(key)
            if reconciled.member_epoch != updated.member_epoch or reconciled.state != updated.state:
                out.note(now, Event.MEMBER_RECONCILED, group, reconciled.member_id, epoch=reconciled.member_epoch,
                         previous_epoch=updated.member_epoch, target_epoch=target_epoch, state=reconciled.state.name)
        return reconciled

    # --- endpoints for interactive queries ------------------------------------------------------
    def _check_endpoints(self, group: StreamsGroup, member: StreamsMember, configured: ConfiguredTopology,
                         sent_epoch: int, tasks_changed: bool) -> None:
        """Kafka builds the endpoints' partitions from the configured subtopologies, which a
        topology waiting for its source topics (or refused for its partitioning) has none of: a
        heartbeat that is to carry endpoints then fails whole, UNKNOWN_SERVER_ERROR, nothing
        written (Kafka 4.3's NoSuchElementException), as against Kafka."""
        epoch = group.endpoint_information_epoch + (1 if tasks_changed and member.user_endpoint is not None else 0)
        if epoch == sent_epoch or configured.subtopologies is not None:
            return
        if member.user_endpoint is not None or any(m.user_endpoint is not None for m in group.members.values()):
            log.error("group %s: member %s: the endpoints' partitions need the configured topology, which "
                      "waits for its topics (%s)", safe(group.group_id), safe(member.member_id), configured.status[1])
            raise GroupError(E.UNKNOWN_SERVER_ERROR)

    def _endpoints(self, group: StreamsGroup, member: StreamsMember) -> tuple:
        """Each member with a user endpoint and the partitions of its tasks (the heartbeating
        member last), as Kafka's StreamsGroup.buildEndpointToPartitions."""
        cls = HeartbeatResponse.EndpointToPartitions
        others = [m for m in group.members_in_kafka_order() if m.member_id != member.member_id]
        entries = []
        for m in [*others, member]:
            if m.user_endpoint is None:
                continue
            entries.append(cls(user_endpoint=cls.Endpoint(host=m.user_endpoint.host, port=m.user_endpoint.port),
                               active_partitions=self._task_partitions(group, m.assigned.active),
                               standby_partitions=self._task_partitions(group, m.assigned.standby)))
        return tuple(entries)

    def _task_partitions(self, group: StreamsGroup, tasks) -> tuple:
        tp = HeartbeatResponse.EndpointToPartitions.TopicPartition
        subtopologies = group.configured.subtopologies if group.configured is not None else None
        out = []
        for s, ps in tasks.items():
            sub = (subtopologies or {}).get(s)
            if sub is None:
                continue
            for topic in hash_set_order([*sub.source_topics, *(t.name for t in sub.repartition_sources)]):
                count = self._partitions_of(topic) or 0
                partitions = tuple(sorted(p for p in ps if p < count))
                if partitions:
                    out.append(tp(topic=topic, partitions=partitions))
        return tuple(out)

    # --- leaving and fencing ------------------------------------------------------------------
    def _leave(self, out: CoordinatorResult, now: int, req):
        """Kafka's streamsGroupLeave (the member epoch is not checked)."""
        group = self.group(req.group_id)
        if req.shutdown_application and group.shutdown_requester is None:
            group.shutdown_requester = req.member_id
        member = group.members.get(req.member_id)
        if member is None:
            raise GroupError(E.UNKNOWN_MEMBER_ID, f"Member {req.member_id} is not a member of group {req.group_id}.")
        log.info("group %s: member %s left the streams group", safe(group.group_id), safe(req.member_id))
        self.fence(out, now, group, member)
        return HeartbeatResponse(error_code=E.NONE, member_id=req.member_id, member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                                 status=())

    def fence(self, out: CoordinatorResult, now: int, group: StreamsGroup, member: StreamsMember,
              why: Expiry | None = None) -> None:
        """Kafka's streamsGroupFenceMember: the member's records go and the group epoch grows."""
        if why:
            out.note(now, Event.MEMBER_EXPIRED, group, member.member_id, reason=why)
        else:
            out.note(now, Event.MEMBER_LEFT, group, member.member_id)
        records = rec.member_tombstones(group.group_id, member.member_id)
        records.append(rec.group_epoch(group, group.group_epoch + 1, group.metadata_hash,
                                       group.validated_topology_epoch, group.last_assignment_configs))
        self.timers.cancel(("streams-session", group.group_id, member.member_id))
        self.timers.cancel(("streams-rebalance", group.group_id, member.member_id))
        self.apply(out, records)

    def schedule_session(self, group_id: str, member_id: str, now: int) -> None:
        def expire(out: CoordinatorResult, at: int) -> None:
            group = self.groups.get(group_id)
            member = group.members.get(member_id) if group is not None else None
            if member is not None:
                log.info("group %s: member %s fenced from the streams group (its session expired)",
                         safe(group_id), safe(member_id))
                self.fence(out, at, group, member, Expiry.SESSION)
        self.timers.schedule(("streams-session", group_id, member_id), now + self.session_timeout_ms(group_id), expire)

    def _schedule_rebalance_timeout(self, group_id: str, member: StreamsMember, now: int) -> None:
        epoch, member_id = member.member_epoch, member.member_id

        def expire(out: CoordinatorResult, at: int) -> None:
            group = self.groups.get(group_id)
            current = group.members.get(member_id) if group is not None else None
            if current is not None and current.member_epoch == epoch:
                log.info("group %s: member %s fenced from the streams group (it did not revoke its tasks "
                         "within its rebalance timeout of %d ms)", safe(group_id), safe(member_id),
                         member.rebalance_timeout_ms)
                self.fence(out, at, group, current, Expiry.REVOCATION)
        self.timers.schedule(("streams-rebalance", group_id, member_id), now + member.rebalance_timeout_ms, expire)

    # --- records ------------------------------------------------------------------------------
    def apply(self, out: CoordinatorResult, records: list) -> None:
        """Persist the records, then replay them (a new group is materialized by its records)."""
        out.persist([encode_record(record) for record in records])
        for record in records:
            if isinstance(record, GroupRecord):
                self.replay(record)
            else:                                   # an empty classic group's tombstone
                self.classic.replay(record)

    def replay(self, record: GroupRecord) -> None:
        group = self.groups.get(record.group)
        if group is None:
            if record.value is None:
                return
            group = self.groups[record.group] = StreamsGroup(record.group)
            self.classic.drop_simple(record.group)     # its offsets came first (a compacted log)
        if record.type == rec.GROUP_EPOCH and record.value is None:
            del self.groups[record.group]
            self.timers.cancel(("streams-initial-rebalance", record.group))
            return
        rec.replay_into(group, record)

    def delete_records(self, group: StreamsGroup) -> list:
        return rec.delete_records(group)

    def loaded(self, now: int) -> None:
        for group in self.groups.values():
            for member in group.members.values():
                self.schedule_session(group.group_id, member.member_id, now)
                if member.state == MemberState.UNREVOKED_TASKS:
                    self._schedule_rebalance_timeout(group.group_id, member, now)

    def unload(self) -> None:
        self.groups.clear()

    # --- StreamsGroupDescribe -------------------------------------------------------------------
    def describe(self, out: CoordinatorResult, now: int, ctx: RequestContext, req) -> None:
        groups = r.described_groups(req.group_ids, self.owns, lambda g: self._described(
            self.group(g), req.include_authorized_operations), DescribeResponse.DescribedGroup)
        out.reply(ctx.token, ApiKey.STREAMS_GROUP_DESCRIBE, ctx.version, DescribeResponse(groups=groups))

    def _described(self, group: StreamsGroup, operations: bool):
        cls = DescribeResponse.DescribedGroup
        member_cls = cls.Member
        ids = member_cls.Assignment.TaskIds

        def assignment(tasks: TasksTuple):
            return member_cls.Assignment(active_tasks=to_wire(ids, tasks.active),
                                               standby_tasks=to_wire(ids, tasks.standby),
                                               warmup_tasks=to_wire(ids, tasks.warmup))
        members = tuple(member_cls(
            member_id=m.member_id, member_epoch=m.member_epoch, instance_id=m.instance_id, rack_id=m.rack_id,
            client_id=m.client_id, client_host=m.client_host, topology_epoch=m.topology_epoch,
            process_id=m.process_id, user_endpoint=None if m.user_endpoint is None else member_cls.Endpoint(
                host=m.user_endpoint.host, port=m.user_endpoint.port),
            client_tags=tuple(member_cls.KeyValue(key=k, value=v) for k, v in m.client_tags),
            task_offsets=(), task_end_offsets=(), assignment=assignment(m.assigned),
            target_assignment=assignment(group.target_of(m.member_id)), is_classic=False)
            for m in group.members_in_kafka_order())
        return cls(error_code=E.NONE, group_id=group.group_id, group_state=group.state.value,
                   group_epoch=group.group_epoch, assignment_epoch=group.assignment_epoch,
                   topology=self._described_topology(group), members=members,
                   authorized_operations=r.GROUP_OPERATIONS if operations else -2147483648)

    def _described_topology(self, group: StreamsGroup):
        cls = DescribeResponse.DescribedGroup.Topology
        sub = cls.Subtopology
        info_cls = sub.TopicInfo

        def info(t):
            return info_cls(name=t.name, partitions=t.partitions, replication_factor=t.replication_factor,
                            topic_configs=tuple(info_cls.KeyValue(key=k, value=v) for k, v in t.configs))
        if group.topology is None:
            raise GroupError(E.UNKNOWN_SERVER_ERROR)
        configured = group.configured
        if configured is not None and configured.ready:
            subtopologies = tuple(sub(
                subtopology_id=s, source_topics=tuple(sorted(c.source_topics)),
                repartition_sink_topics=tuple(sorted(c.repartition_sinks)),
                state_changelog_topics=tuple(info(t) for t in sorted(c.changelogs, key=lambda t: t.name)),
                repartition_source_topics=tuple(info(t) for t in sorted(c.repartition_sources, key=lambda t: t.name)))
                for s, c in sorted(configured.subtopologies.items()))
        else:
            subtopologies = tuple(sub(
                subtopology_id=s.subtopology_id, source_topics=tuple(sorted(s.source_topics)),
                repartition_sink_topics=tuple(sorted(s.repartition_sinks)),
                state_changelog_topics=tuple(info(t) for t in sorted(s.changelogs, key=lambda t: t.name)),
                repartition_source_topics=tuple(info(t) for t in sorted(s.repartition_sources, key=lambda t: t.name)))
                for s in sorted(group.topology.subtopologies, key=lambda s: s.subtopology_id))
        return cls(epoch=group.topology.epoch, subtopologies=subtopologies)

    # --- offsets of streams members -------------------------------------------------------------
    def validate_commit(self, group: StreamsGroup, member_id: str, epoch: int, version: int,
                        partitions: list[tuple[str, int]], transactional: bool = False) -> ErrorCode:
        """Kafka's StreamsGroup.validateOffsetCommit: a member's commit at its epoch, or at an
        older one for the active tasks it was given then."""
        if epoch < 0 and group.is_empty():
            return E.NONE
        member = group.members.get(member_id)
        if member is None:
            return E.UNKNOWN_MEMBER_ID
        if not transactional and version < 9:
            return E.UNSUPPORTED_VERSION
        if epoch == member.member_epoch:
            return E.NONE
        stale = E.ILLEGAL_GENERATION if transactional else E.STALE_MEMBER_EPOCH
        if epoch > member.member_epoch or group.topology is None:
            return stale
        for topic, partition in partitions:
            subtopology = group.topology.source_subtopology(topic)
            assigned_at = member.active_epochs.get((subtopology, partition)) if subtopology is not None else None
            if assigned_at is None or epoch < assigned_at:
                return stale
        return E.NONE

    def validate_fetch(self, group: StreamsGroup, member_id: str | None, epoch: int) -> ErrorCode:
        """Kafka's StreamsGroup.validateOffsetFetch."""
        if member_id is None and epoch < 0:
            return E.NONE
        member = group.members.get(member_id)
        if member is None:
            return E.UNKNOWN_MEMBER_ID
        return E.NONE if epoch == member.member_epoch else E.STALE_MEMBER_EPOCH
