"""The five actions of ``groupbroker groups --streams``, as Kafka's StreamsGroupCommand performs
them (kafka-streams-groups.sh).

Columns, widths, messages and the order of checks follow Kafka 4.3's StreamsGroupCommand and
OffsetsUtils. Where Kafka prints a Java HashMap's entries, they come in that map's order
(:mod:`coordinator.java_order`); keys that share a bucket come in an order Kafka's own tool
draws per run (its maps are filled from randomized immutable ones), here sorted.
"""

from __future__ import annotations

import re

from coordinator.java_order import grown_capacity, hash_map_order, iteration_order, topic_partition_hash
from protocol.errors import ErrorCode

from kafka_client.admin import (EARLIEST, LATEST, Cluster, Connection, GroupsError, KafkaError, StreamsGroup,
                                commit_offsets, delete_groups, delete_offsets, delete_topics,
                                describe_streams_group, fetch_committed, find_coordinator, list_groups, list_offsets,
                                topic_partitions)
from .commands import TP, CommandFailed, offsets_deleted, reset_targets, states_filter, topic_with_partitions
from .options import Options, UsageError
from .render import Output, dash, error_message, exception_text, widest

#: GroupState.groupStatesForType(STREAMS) by the names GroupState.parse accepts (Kafka lists them
#: in a Set.of's order, which each JVM draws at random; here, alphabetical)
STREAMS_STATES = {s.lower(): s for s in ("Assigning", "Dead", "Empty", "NotReady", "Reconciling", "Stable")}
_INTERNAL_SUFFIXES = ("-changelog", "-repartition", "-subscription-registration-topic", "-subscription-response-topic")
_FK_JOIN = re.compile(r".+-KTABLE-FK-JOIN-SUBSCRIPTION-(REGISTRATION|RESPONSE)-\d+-topic")


class StreamsCommandFailed(CommandFailed):
    """'Executing streams group command failed due to ...' (exit code 1); Kafka's tool prints
    the exception on stderr too."""

    def __init__(self, message: str, thrown: str | None = None):
        super().__init__(message, thrown or message)


def _failed(code: ErrorCode, message: str | None, wrapped: bool = False) -> StreamsCommandFailed:
    """An admin call's exception as Kafka's tool prints it (``wrapped``: inside the
    ExecutionException a RuntimeException carries)."""
    text = exception_text(code, message)
    execution = f"java.util.concurrent.ExecutionException: {text}"
    if wrapped:
        return StreamsCommandFailed(execution, f"java.lang.RuntimeException: {execution}")
    return StreamsCommandFailed(text, execution)


def _coordinator(cluster: Cluster, group: str) -> tuple[Connection, str]:
    node, host, port = find_coordinator(cluster, group)
    return cluster.connection(host, port), f"{host}:{port} ({node})"


def _streams_groups(cluster: Cluster, states: list[str] | None = None) -> dict[str, str]:
    """ListGroups of type streams: group id -> state, in the admin client's HashMap order."""
    listed = {g: state for g, (_, state, _) in list_groups(cluster, states=states, types=["streams"]).items()}
    return {g: listed[g] for g in hash_map_order(list(listed))}


def _describe(cluster: Cluster, group: str, wrapped: bool = False) -> tuple[StreamsGroup, str]:
    coordinator, label = _coordinator(cluster, group)
    try:
        return describe_streams_group(coordinator, group), label
    except KafkaError as e:
        raise _failed(e.code, e.what or None, wrapped) from None


def _row(cells: list, widths: list[int], pad_last: bool = False) -> str:
    """One printf line of Java ``%-Ns`` columns joined by a space."""
    last = len(cells) - 1
    return " ".join(str(c).ljust(w) if i < last or pad_last else str(c) for i, (c, w) in enumerate(zip(cells, widths)))


# --------------------------------------------------------------------------- --list

def cmd_list(cluster: Cluster, opts: Options, out: Output) -> int:
    if opts.state is None:
        out.lines(list(_streams_groups(cluster)))
        return 0
    listed = _streams_groups(cluster, states_filter(opts.state, STREAMS_STATES))
    width = widest(15, listed)
    out.lines([_row(["GROUP", "STATE"], [width, 0]), *(_row([g, s], [width, 0]) for g, s in listed.items())])
    return 0


# --------------------------------------------------------------------------- --describe

def cmd_describe(cluster: Cluster, opts: Options, out: Output) -> int:
    for group_id in list(_streams_groups(cluster)) if opts.all_groups else opts.groups:
        group, label = _describe(cluster, group_id)
        if opts.view == "members":
            _members(group, opts, out)
        elif opts.view == "state":
            _state(group, label, opts, out)
        else:
            _offsets(cluster, group, opts, out)
    return 0


def _valid(group: StreamsGroup) -> bool:
    return group.state != "Dead" and len(group.members) > 0


def _announce(group: StreamsGroup, out: Output) -> None:
    """maybePrintEmptyGroupState."""
    if group.state == "Dead":
        out.error(f"Streams group '{group.group_id}' does not exist.")
    elif group.state == "Empty":
        out.error(f"Streams group '{group.group_id}' has no active members.")


def _offsets(cluster: Cluster, group: StreamsGroup, opts: Options, out: Output) -> None:
    topics = {s.subtopology_id: [*s.source_topics, *s.repartition_sources] for s in group.subtopologies}
    partitions = []
    for member in group.members:
        for subtopology, tasks in member.active:
            if subtopology not in topics:
                raise UsageError(f"Subtopology {subtopology} not found in group description!")
            partitions += [(t, p) for t in topics[subtopology] for p in tasks]
    partitions = list(dict.fromkeys(partitions))
    earliest, latest = list_offsets(cluster, partitions, EARLIEST), list_offsets(cluster, partitions, LATEST)
    coordinator, _ = _coordinator(cluster, group.group_id)
    inputs = {t for ts in topics.values() for t in ts}
    committed = {tp: c for tp, c in fetch_committed(coordinator, group.group_id).items() if tp[0] in inputs}
    if not _valid(group):
        return
    _announce(group, out)
    rows = []
    for tp in iteration_order(sorted(earliest), lambda tp: topic_partition_hash(*tp), grown_capacity(len(earliest))):
        current = committed.get(tp)
        lag = latest[tp] - (current[0] if current is not None else earliest[tp])
        epoch = dash(current[1] if current is not None and current[1] >= 0 else None)
        rows.append([group.group_id, *tp, dash(current[0] if current else None), epoch, latest[tp], lag])
    widths = [widest(15, [group.group_id]), widest(15, (r[1] for r in rows)), 10]
    if opts.verbose:
        header = ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LEADER-EPOCH", "LOG-END-OFFSET", "OFFSET-LAG"]
        out.lines([_row(r, widths + [15] * 4, pad_last=True) for r in [header, *rows]])
    else:
        out.lines([_row(r, widths + [0]) for r in [["GROUP", "TOPIC", "PARTITION", "OFFSET-LAG"],
                                                  *([r[0], r[1], r[2], r[6]] for r in rows)]])


def _tasks(kinds: list[tuple[str, list]]) -> str:
    """StreamsGroupCommand's task string: ``ACTIVE: 0:[0,2]; 1:[1]; `` per kind that has tasks."""
    return "".join(f"{kind}: " + "".join(f"{s}:[{','.join(map(str, ps))}]; " for s, ps in tasks)
                   for kind, tasks in kinds if tasks)


def _members(group: StreamsGroup, opts: Options, out: Output) -> None:
    if not _valid(group):
        return
    _announce(group, out)
    members = group.members
    g, m = widest(15, [group.group_id]), widest(15, (x.member_id for x in members))
    p, c = widest(15, (x.process_id for x in members)), widest(15, (x.client_id for x in members))
    if not opts.verbose:
        lines = [_row(["GROUP", "MEMBER", "PROCESS", "CLIENT-ID", "ASSIGNMENTS"], [g, m, p, c, 0])]
        lines += [_row([group.group_id, x.member_id, x.process_id, x.client_id,
                        _tasks([("ACTIVE", x.active), ("STANDBY", x.standby), ("WARMUP", x.warmup)])], [g, m, p, c, 0])
                  for x in members]
        out.lines(lines)
        return

    def verbose(cells: list) -> str:           # no space between TOPOLOGY-EPOCH and MEMBER, as Kafka's format
        return (f"{_row(cells[:3], [g, 25, 15], pad_last=True)}"
                f"{_row(cells[3:], [m, 15, 15, p, c, 0])}")
    lines = [verbose(["GROUP", "TARGET-ASSIGNMENT-EPOCH", "TOPOLOGY-EPOCH", "MEMBER", "MEMBER-PROTOCOL",
                      "MEMBER-EPOCH", "PROCESS", "CLIENT-ID", "ASSIGNMENTS"])]
    for x in members:
        target = x.target
        lines.append(verbose([group.group_id, group.assignment_epoch, group.topology_epoch, x.member_id,
                              "classic" if x.is_classic else "streams", x.member_epoch, x.process_id, x.client_id,
                              _tasks([("ACTIVE", x.active), ("STANDBY", x.standby), ("WARMUP", x.warmup),
                                      ("TARGET-ACTIVE", target[0]), ("TARGET-STANDBY", target[1]),
                                      ("TARGET-WARMUP", target[2])])]))
    out.lines(lines)


def _state(group: StreamsGroup, label: str, opts: Options, out: Output) -> None:
    _announce(group, out)
    widths = [widest(15, [group.group_id]), widest(25, [label]), 25]
    header, row = ["GROUP", "COORDINATOR (ID)", "STATE"], [group.group_id, label, group.state]
    if opts.verbose:
        header += ["GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH"]
        row += [group.group_epoch, group.assignment_epoch]
        widths += [15, 25]
    out.lines([_row(header + ["#MEMBERS"], widths + [0]), _row(row + [len(group.members)], widths + [0])])


# --------------------------------------------------------------------------- --delete

def cmd_delete(cluster: Cluster, opts: Options, out: Output) -> int:
    listed = _streams_groups(cluster)
    ids = list(dict.fromkeys(listed if opts.all_groups else opts.groups))
    failed: dict[str, str] = {}
    for group in ids:
        state = listed.get(group)
        if group not in listed:
            failed[group] = (f"java.lang.IllegalArgumentException: Group '{group}' does not exist or is not a "
                             "streams group.")
        elif state == "Dead":
            failed[group] = f"java.lang.IllegalStateException: Streams group '{group}' group state is DEAD."
        elif state and state != "Empty":
            failed[group] = exception_text(ErrorCode.NON_EMPTY_GROUP, f"Streams group '{group}' is not EMPTY.")
    remaining = [g for g in ids if g not in failed]
    internal = _internal_topics(cluster, remaining, out) if remaining and opts.all_internal_topics else {}
    deleted = []
    for group in remaining:
        code = delete_groups(_coordinator(cluster, group)[0], [group]).get(group, ErrorCode.UNKNOWN_SERVER_ERROR)
        if code == ErrorCode.NONE:
            deleted.append(group)
        else:
            failed[group] = exception_text(code)
    deleted = hash_map_order(deleted)
    topic_failures = {}
    for group in deleted:
        if internal.get(group):
            outcome = delete_topics(cluster, internal[group])
            bad = [t for t in hash_map_order(list(outcome)) if outcome[t][0] != ErrorCode.NONE]
            for topic in bad:
                out.lines([f"Failed to delete internal topic: {topic}"])
            if bad:
                topic_failures[group] = exception_text(*outcome[bad[0]])
    quoted = "', '".join(deleted)
    if not failed:
        out.lines([f"Deletion of requested streams groups ('{quoted}') was successful."])
    else:
        out.error("Deletion of some streams groups failed:")
        out.lines([f"* Group '{g}' could not be deleted due to: {failed[g]}" for g in hash_map_order(list(failed))])
        if deleted:
            out.lines(["", f"These streams groups were deleted successfully: '{quoted}'."])
    if any(internal.get(g) for g in deleted):
        if not topic_failures:
            with_topics = "', '".join(g for g in deleted if internal.get(g))
            out.lines([f"Deletion of associated internal topics of the streams groups ('{with_topics}') was "
                       "successful."])
        else:
            out.lines(["Deletion of some associated internal topics failed:", *(
                f"* Internal topics of the streams group '{g}' could not be deleted due to: {topic_failures[g]}"
                for g in hash_map_order(list(topic_failures)))])
    return 0


def _inferred_internal(topic: str, app: str) -> bool:
    return topic.startswith(app + "-") and (topic.endswith(_INTERNAL_SUFFIXES) or bool(_FK_JOIN.fullmatch(topic)))


def _internal_topics(cluster: Cluster, groups: list[str], out: Output) -> dict[str, list[str]]:
    """StreamsGroupCommand.retrieveInternalTopics: each group's repartition and changelog topics
    that are not also sources, those that look like Kafka Streams' own."""
    found: dict[str, list[str]] = {}
    for group_id in groups:
        try:
            group, _ = _describe(cluster, group_id)
        except StreamsCommandFailed as e:
            out.error(f"Retrieving internal topics failed due to java.util.concurrent.ExecutionException: {e}")
            return {}
        sources = {t for s in group.subtopologies for t in s.source_topics}
        candidates = [t for s in group.subtopologies for t in (*hash_map_order(s.repartition_sources),
                                                                *hash_map_order(s.changelogs)) if t not in sources]
        kept = []
        for topic in candidates:
            if _inferred_internal(topic, group_id):
                kept.append(topic)
            else:
                out.error(f"The internal topic '{topic}' is not inferred as internal and thus will not be deleted "
                          f"with the group '{group_id}'.")
        if kept:
            found[group_id] = kept
    return found


# --------------------------------------------------------------------------- --reset-offsets

def cmd_reset_offsets(cluster: Cluster, opts: Options, out: Output) -> int:
    ids = list(_streams_groups(cluster)) if opts.all_groups else list(dict.fromkeys(opts.groups))
    plans: dict[str, dict[TP, int]] = {}
    for group_id in hash_map_order(ids):
        coordinator, _ = _coordinator(cluster, group_id)
        try:
            group = describe_streams_group(coordinator, group_id)
        except KafkaError as e:
            if e.code != ErrorCode.GROUP_ID_NOT_FOUND:
                raise _failed(e.code, e.what or None, wrapped=True) from None
            group = None                            # Kafka's tool resets such a group all the same
        if group is not None and group.state not in ("Empty", "Dead"):
            out.error(f"Assignments can only be reset if the group '{group_id}' is inactive, but the current state "
                      f"is {group.state}.")
            plans[group_id] = {}
            continue
        plans[group_id] = _reset_group(cluster, coordinator, group_id, opts, out)
        if opts.execute and group is not None:
            _delete_internal(cluster, group_id, opts, out)
    if opts.export:
        single = len(opts.groups) == 1
        out.lines(["".join(f"{'' if single else g + ','}{t},{p},{off}\n" for g, plan in plans.items()
                           for (t, p), off in _ordered(plan))])
        return 0
    if plans:
        out.table(["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"],
                  [[g, t, p, off] for g, plan in plans.items() for (t, p), off in _ordered(plan)], [30, 30, 10, 15],
                  pad_last=True)
    else:
        out.lines([""])
    return 0


def _ordered(plan: dict[TP, int]) -> list[tuple[TP, int]]:
    return [(tp, plan[tp]) for tp in iteration_order(list(plan), lambda tp: topic_partition_hash(*tp),
                                                     grown_capacity(len(plan)))]


def _reset_group(cluster: Cluster, coordinator: Connection, group: str, opts: Options, out: Output) -> dict[TP, int]:
    committed_all = fetch_committed(coordinator, group)
    committed = {tp: off for tp, (off, _) in committed_all.items()}
    if opts.all_topics:
        described, _ = _describe(cluster, group, wrapped=True)
        sources = {t for s in described.subtopologies for t in s.source_topics}
        partitions = [tp for tp in committed if tp[0] in sources]
    elif opts.topics:
        named = [tp for t in opts.topics if ":" in t for tp in topic_with_partitions(t)]
        whole = [tp for t in opts.topics if ":" not in t for tp in _partitions_of(cluster, t)]
        partitions = list(dict.fromkeys(named + whole))
        if any(tp not in committed for tp in partitions):
            out.error(f"One or more topics are not part of the group '{group}'.")
            return {}
    elif opts.scenario != "from-file":
        raise UsageError("One of the reset scopes should be defined: --all-topics, --topic.")
    else:
        partitions = []
    targets = reset_targets(cluster, partitions, committed, opts, out)
    if opts.execute and targets:
        try:
            commit_offsets(coordinator, group, targets)
        except KafkaError as e:
            raise _failed(e.code, e.what or None) from None
    return targets


def _partitions_of(cluster: Cluster, topic: str) -> list[TP]:
    try:
        return topic_partitions(cluster, topic)
    except GroupsError:
        raise StreamsCommandFailed(error_message(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)) from None


def _delete_internal(cluster: Cluster, group: str, opts: Options, out: Output) -> None:
    """--execute with --delete-all-internal-topics or --delete-internal-topic."""
    if opts.all_internal_topics:
        topics = _internal_topics(cluster, [group], out).get(group)
        if topics is None:                         # Kafka's tool fails here (a NullPointerException)
            raise StreamsCommandFailed('Cannot invoke "java.util.List.isEmpty()" because "internalTopics" is null')
    elif opts.delete_internal_topics:
        topics = opts.delete_internal_topics
    else:
        return
    outcome = delete_topics(cluster, topics)
    codes = {code for code, _ in outcome.values()}
    if ErrorCode.UNKNOWN_TOPIC_OR_PARTITION in codes:
        out.error(f"Deleting internal topics for group '{group}' failed because the topics do not exist.")
    elif codes - {ErrorCode.NONE}:
        code, message = next(v for v in outcome.values() if v[0] != ErrorCode.NONE)
        out.error(f"Deleting internal topics for group '{group}' failed due to "
                  f"java.util.concurrent.ExecutionException: {exception_text(code, message)}")


# --------------------------------------------------------------------------- --delete-offsets

def cmd_delete_offsets(cluster: Cluster, opts: Options, out: Output) -> int:
    group = opts.groups[0]
    results: dict[TP, str] = {}
    coordinator, _ = _coordinator(cluster, group)
    if opts.all_topics:
        described, _ = _describe(cluster, group, wrapped=True)
        sources = {t for s in described.subtopologies for t in s.source_topics}
        partitions = [tp for tp in fetch_committed(coordinator, group) if tp[0] in sources]
    else:
        partitions = [tp for t in opts.topics if ":" in t for tp in topic_with_partitions(t)]
        for topic in dict.fromkeys(t for t in opts.topics if ":" not in t):
            try:
                partitions += topic_partitions(cluster, topic)
            except GroupsError:
                results[(topic, -1)] = f"Error: {exception_text(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)}"
    partitions = list(dict.fromkeys(partitions))
    top, per_partition = delete_offsets(coordinator, group, partitions)
    ordered = iteration_order(partitions, lambda tp: topic_partition_hash(*tp), grown_capacity(len(partitions)))
    if top == ErrorCode.NONE:
        top = next((per_partition[tp] for tp in ordered if per_partition.get(tp, ErrorCode.NONE) != ErrorCode.NONE),
                   top)
    for tp in partitions:
        code = per_partition.get(tp, top)
        results[tp] = "Successful" if code == ErrorCode.NONE else f"Error: {exception_text(code)}"
    offsets_deleted(out, group, top)
    rows = [[t, p if p >= 0 else "-", status] for (t, p), status in sorted(results.items(),
                                                                          key=lambda kv: f"{kv[0][0]}{kv[0][1]}")]
    out.table(["TOPIC", "PARTITION", "STATUS"], rows, [widest(15, (t for t, _ in results)), 10, 15], pad_last=True)
    return 0


COMMANDS = {"list": cmd_list, "describe": cmd_describe, "delete": cmd_delete,
            "reset-offsets": cmd_reset_offsets, "delete-offsets": cmd_delete_offsets}
