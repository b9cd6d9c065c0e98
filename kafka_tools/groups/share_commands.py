"""The five actions of ``groupbroker groups --share``, as Kafka's ShareGroupCommand performs them.

Columns, widths, messages and the order of checks follow Kafka 4.3's ShareGroupCommand and
OffsetsUtils. Where Kafka prints a Java HashMap's entries, they come in that map's order
(:mod:`coordinator.java_order`); where it prints a sorted collection, sorted.
"""

from __future__ import annotations

import sys

from coordinator.java_order import grown_capacity, hash_map_order, iteration_order, topic_partition_hash
from protocol.errors import ErrorCode

from kafka_client.admin import (Cluster, Group, GroupsError, KafkaError, alter_share_offsets, delete_groups, delete_share_offsets,
                                describe_share_group, list_groups, share_offsets, topic_partitions)
from .commands import TP, CommandFailed, coordinator_of, reset_targets, states_filter, topic_with_partitions
from .options import Options
from .render import Output, dash, error_message, exception_text, widest

#: GroupState.groupStatesForType(SHARE), by the names GroupState.parse accepts (Kafka lists
#: them in a Set.of's order, which each JVM draws at random; here, alphabetical)
SHARE_STATES = {"dead": "Dead", "empty": "Empty", "stable": "Stable"}


def _share_groups(cluster: Cluster, states: list[str] | None = None) -> dict[str, str]:
    """ListGroups of type share (ListGroupsOptions.forShareGroups): group id -> state."""
    return {g: state for g, (_, state, _) in list_groups(cluster, states=states, types=["share"]).items()}


def _described(cluster: Cluster, group_id: str) -> tuple[Group, str]:
    """Admin.describeShareGroups of one group, and its coordinator's label; a group the
    coordinator does not know fails the command as Kafka's admin client fails it."""
    coordinator, label = coordinator_of(cluster, group_id)
    try:
        return describe_share_group(coordinator, group_id), label
    except KafkaError as e:
        raise _execution_failed(exception_text(e.code, e.what or None)) from None


# --------------------------------------------------------------------------- --list

def cmd_list(cluster: Cluster, opts: Options, out: Output) -> int:
    if opts.state is None:
        out.lines(sorted(_share_groups(cluster)))
        return 0
    states = states_filter(opts.state, SHARE_STATES)
    listed = sorted(_share_groups(cluster, states).items())
    width = widest(15, (g for g, _ in listed))
    out.lines([f"{'GROUP'.ljust(width)} STATE", *(f"{g.ljust(width)} {state}" for g, state in listed)])
    return 0


# --------------------------------------------------------------------------- --describe

def cmd_describe(cluster: Cluster, opts: Options, out: Output) -> int:
    ids = sorted(_share_groups(cluster)) if opts.all_groups else list(dict.fromkeys(opts.groups))
    described = {g: _described(cluster, g) for g in ids}       # every group first, as Kafka
    for group_id in sorted(described):
        group, label = described[group_id]
        if opts.view == "members":
            _members(group, opts, out)
        elif opts.view == "state":
            _state(group, label, opts, out)
        else:
            _offsets(cluster, group, opts, out)
    return 0


def _announce(group: Group, rows: int, out: Output) -> bool:
    """maybePrintEmptyGroupState: the notice; whether the group's rows are printed."""
    if group.state == "Dead":
        out.error(f"Share group '{group.group_id}' does not exist.")
        return False
    if group.state == "Empty":
        out.notice(f"Share group '{group.group_id}' has no active members.")
    return rows > 0


def _offsets(cluster: Cluster, group: Group, opts: Options, out: Output) -> None:
    coordinator, _ = coordinator_of(cluster, group.group_id)
    try:
        found = share_offsets(coordinator, group.group_id)
    except KafkaError as e:
        raise _execution_failed(exception_text(e.code, e.what or None)) from None
    if not found:
        out.lines(["", f"Share group '{group.group_id}' has no offset information."])
        return
    rows = []
    for (topic, partition), info in sorted(found.items()):
        known = info.start_offset >= 0           # Kafka's admin client: no start offset, no info
        rows.append([group.group_id, topic, partition,
                     *([dash(info.leader_epoch if known and info.leader_epoch >= 0 else None)] if opts.verbose else []),
                     dash(info.start_offset if known else None), dash(info.lag if known and info.lag >= 0 else None)])
    header = ["GROUP", "TOPIC", "PARTITION", *(["LEADER-EPOCH"] if opts.verbose else []), "START-OFFSET", "LAG"]
    widths = [widest(15, [group.group_id]), widest(15, (t for t, _ in found)), 10, *([13] if opts.verbose else []),
              13, 0]
    out.table(header, rows, widths)


def _state(group: Group, label: str, opts: Options, out: Output) -> None:
    _announce(group, 1, out)
    header = ["GROUP", "COORDINATOR (ID)", "STATE"]
    row = [group.group_id, label, group.state]
    widths = [widest(15, [group.group_id]), widest(25, [label]), 15]
    if opts.verbose:
        header += ["GROUP-EPOCH", "ASSIGNMENT-EPOCH"]
        row += [dash(group.group_epoch), dash(group.assignment_epoch)]
        widths += [12, 17]
    out.table(header + ["#MEMBERS"], [row + [len(group.members)]], widths + [0])


def _assignment(partitions: list[TP]) -> str:
    """ShareGroupCommand's getAssignmentString: ``topic:0,1;other:2``, empty for nothing."""
    by_topic: dict[str, list[int]] = {}
    for t, p in partitions:
        by_topic.setdefault(t, []).append(p)
    return ";".join(sorted(f"{t}:{','.join(str(p) for p in sorted(ps))}" for t, ps in by_topic.items()))


def _members(group: Group, opts: Options, out: Output) -> None:
    if not _announce(group, len(group.members), out):
        return
    members = sorted(group.members, key=lambda m: m.member_id)
    header = ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS",
              *(["MEMBER-EPOCH"] if opts.verbose else []), "ASSIGNMENT"]
    rows = [[group.group_id, m.member_id, m.host, m.client_id, len(m.partitions),
             *([dash(m.member_epoch)] if opts.verbose else []), _assignment(m.partitions)] for m in members]
    widths = [widest(15, [group.group_id]), widest(15, (m.member_id for m in members)),
              widest(15, (m.host for m in members)), widest(15, (m.client_id for m in members)), 12,
              *([13] if opts.verbose else []), 0]
    out.table(header, rows, widths)


# --------------------------------------------------------------------------- --delete

def cmd_delete(cluster: Cluster, opts: Options, out: Output) -> int:
    listed = _share_groups(cluster)
    ids = list(listed) if opts.all_groups else list(dict.fromkeys(opts.groups))
    failed: dict[str, str] = {}
    for group in ids:
        state = listed.get(group)
        if state is None:
            failed[group] = f"java.lang.IllegalArgumentException: Group '{group}' is not a share group."
        elif state == "Dead":
            failed[group] = f"java.lang.IllegalStateException: Share group '{group}' group state is DEAD."
        elif state != "Empty":
            failed[group] = exception_text(ErrorCode.NON_EMPTY_GROUP, f"Share group '{group}' is not EMPTY.")
    by_coordinator: dict = {}
    for group in ids:
        if group not in failed:
            by_coordinator.setdefault(coordinator_of(cluster, group)[0], []).append(group)
    deleted = []
    for coordinator, names in by_coordinator.items():
        for group, code in delete_groups(coordinator, names).items():
            if code == ErrorCode.NONE:
                deleted.append(group)
            else:
                failed[group] = exception_text(code)
    deleted = hash_map_order(deleted)
    if not failed:
        out.lines([f"Deletion of requested share groups ({', '.join(_quoted(deleted))}) was successful."])
        return 0
    out.error("Deletion of some share groups failed:")
    out.lines([f"* Group '{g}' could not be deleted due to: {failed[g]}" for g in hash_map_order(list(failed))])
    if deleted:
        out.lines(["", f"These share groups were deleted successfully: {', '.join(_quoted(deleted))}"])
    return 0


def _quoted(groups: list[str]) -> list[str]:
    return [f"'{g}'" for g in groups]


# --------------------------------------------------------------------------- --delete-offsets

def cmd_delete_offsets(cluster: Cluster, opts: Options, out: Output) -> int:
    group = opts.groups[0]
    topics = hash_map_order(list(dict.fromkeys(opts.topics)))      # the tool's HashSet of topics
    coordinator, _ = coordinator_of(cluster, group)
    top, message, per_topic = delete_share_offsets(coordinator, group, topics)
    if top != ErrorCode.NONE:                # every topic's result is the group's failure
        outcome = {t: (top, message or error_message(top)) for t in topics}
    else:                                    # all() fails with the first failed topic's error
        outcome = {t: (code, None if code == ErrorCode.NONE else text or error_message(code))
                   for t in topics for code, text in [per_topic.get(t, (ErrorCode.UNKNOWN_SERVER_ERROR, None))]}
        top = next((outcome[t][0] for t in topics if outcome[t][0] != ErrorCode.NONE), ErrorCode.NONE)
    failure = next((text for code, text in outcome.values() if code == top), None)
    if top in (ErrorCode.INVALID_GROUP_ID, ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.GROUP_AUTHORIZATION_FAILED,
               ErrorCode.NON_EMPTY_GROUP):
        out.error(failure)
    elif top not in (ErrorCode.NONE, ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
        out.error(f"Encounter some unknown error: {exception_text(top, failure)}")
    rows = [[t, "Successful" if text is None else f"Error: {text}"] for t, (_, text) in sorted(outcome.items())]
    out.table(["TOPIC", "STATUS"], rows, [widest(15, outcome), 0])
    return 0


# --------------------------------------------------------------------------- --reset-offsets

def cmd_reset_offsets(cluster: Cluster, opts: Options, out: Output) -> int:
    group = opts.groups[0]
    coordinator, _ = coordinator_of(cluster, group)
    try:
        state = describe_share_group(coordinator, group).state
    except KafkaError as e:
        if e.code != ErrorCode.GROUP_ID_NOT_FOUND:
            return _error_and_exit(e.what or error_message(e.code))
        state = "Dead"
    if state not in ("Empty", "Dead"):
        return _error_and_exit(f"Share group '{group}' is not empty.")
    if opts.topics:
        named = [tp for t in opts.topics if ":" in t for tp in topic_with_partitions(t)]
        partitions = list(dict.fromkeys(named + [tp for t in opts.topics if ":" not in t
                                                 for tp in _partitions_of(cluster, t)]))
    else:
        partitions = list(share_offsets(coordinator, group))
    _check_exist(cluster, partitions)
    targets = reset_targets(cluster, partitions, {}, opts, out)
    # the order of the tool's HashMap of offsets (its first failed partition fails the command)
    ordered = iteration_order(list(targets), lambda tp: topic_partition_hash(*tp), grown_capacity(len(targets)))
    if opts.execute:
        top, message, per_partition = alter_share_offsets(coordinator, group, targets)
        failed = [(top, message)] + [per_partition[tp] for tp in ordered if tp in per_partition]
        code, message = next((f for f in failed if f[0] != ErrorCode.NONE), (ErrorCode.NONE, None))
        if code != ErrorCode.NONE:
            raise _api_failed(code, message)
    out.table(["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"], [[group, t, p, targets[(t, p)]] for t, p in ordered],
              [widest(15, [group]), widest(15, (t for t, _ in ordered)), 10, 0])
    return 0


def _partitions_of(cluster: Cluster, topic: str) -> list[TP]:
    """Admin.describeTopics of a whole topic; an unknown one fails the command as Kafka's does."""
    try:
        return topic_partitions(cluster, topic)
    except GroupsError:
        raise _api_failed(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None) from None


def _check_exist(cluster: Cluster, partitions: list[TP]) -> None:
    """OffsetsUtils.checkAllTopicPartitionsValid: every partition exists."""
    known: dict[str, set[int]] = {}
    for topic in dict.fromkeys(t for t, _ in partitions):
        try:
            known[topic] = {p for _, p in topic_partitions(cluster, topic)}
        except GroupsError:
            known[topic] = set()
    absent = [f"{t}-{p}" for t, p in partitions if p not in known[t]]
    if absent:
        raise _api_failed(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f'The partitions "{",".join(absent)}" do not exist')


def _execution_failed(cause: str) -> CommandFailed:
    """An admin call's future failed: Kafka's tool reports the ExecutionException."""
    return CommandFailed(cause, f"java.util.concurrent.ExecutionException: {cause}")


def _api_failed(code: ErrorCode, message: str | None) -> CommandFailed:
    """An ApiException thrown as it is: its message, and Java's line for it."""
    return CommandFailed(message or error_message(code), exception_text(code, message))


def _error_and_exit(message: str) -> int:
    """CommandLineUtils.printErrorAndExit: the message on stderr, exit code 1."""
    sys.stderr.write(message + "\n")
    return 1


COMMANDS = {"list": cmd_list, "describe": cmd_describe, "delete": cmd_delete,
            "reset-offsets": cmd_reset_offsets, "delete-offsets": cmd_delete_offsets}
