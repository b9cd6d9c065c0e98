"""The five actions of ``groupbroker groups``, as Kafka's ConsumerGroupCommand performs them.

Each takes the :class:`Options` of either syntax and a connected :class:`Cluster`. Columns,
widths, messages and the order of checks follow Kafka 4.x's ConsumerGroupCommand and
OffsetsUtils; rows are sorted by topic and partition where Kafka's order is a Java HashMap's.
"""

from __future__ import annotations

import logging
import time

from protocol.errors import ErrorCode

from kafka_client.admin import (EARLIEST, LATEST, Cluster, Connection, Group, GroupsError, commit_offsets,
                                delete_groups, delete_offsets, describe_group, fetch_committed,
                                find_coordinator, list_groups, list_offsets, topic_partitions)
from .options import NO_EXECUTE_WARNING, Options, UsageError, warn
from .render import Output, dash, error_message, exception_text, widest
from .times import parse_datetime, parse_duration

log = logging.getLogger(__name__)

TP = tuple[str, int]
REBALANCING = {"preparingrebalance", "completingrebalance", "assigning", "reconciling"}
#: GroupState.groupStatesForType(CONSUMER), in the enum's order
CONSUMER_STATES = ("PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty",
                   "Assigning", "Reconciling")
CONSUMER_TYPES = ("classic", "consumer")


class CommandFailed(GroupsError):
    """A failure Kafka's tool reports as 'Executing consumer group command failed due to ...';
    ``thrown``: how Java prints the exception (the share tool prints it on stderr too)."""

    def __init__(self, message: str, thrown: str | None = None):
        super().__init__(message)
        self.thrown = thrown


def tp_name(tp: TP) -> str:
    return f"{tp[0]}-{tp[1]}"               # TopicPartition.toString


def coordinator_of(cluster: Cluster, group: str) -> tuple[Connection, str]:
    node, host, port = find_coordinator(cluster, group)
    return cluster.connection(host, port), f"{host}:{port}  ({node})"


def _group_ids(cluster: Cluster, opts: Options) -> list[str]:
    return _consumer_groups(cluster) if opts.all_groups else list(dict.fromkeys(opts.groups))


def _consumer_groups(cluster: Cluster) -> list[str]:
    """ListGroupsOptions.forConsumerGroups: classic groups of protocol "consumer" or none."""
    return sorted(g for g, (protocol, _, _) in list_groups(cluster).items() if protocol in ("consumer", ""))


# --------------------------------------------------------------------------- --list

def cmd_list(cluster: Cluster, opts: Options, out: Output) -> int:
    if opts.state is None and opts.type is None:
        out.lines(_consumer_groups(cluster))
        return 0
    states = _filter_values(opts.state, CONSUMER_STATES, "state")
    types = _filter_values(opts.type, CONSUMER_TYPES, "type")
    listed = list_groups(cluster, states=states, types=types or list(CONSUMER_TYPES))
    groups = sorted((g, kind, state) for g, (protocol, state, kind) in listed.items()
                    if protocol in ("consumer", ""))
    header, widths, legacy = ["GROUP"], [widest(15, (g for g, _, _ in groups)) + 10], [15]
    if opts.type is not None:
        header, widths, legacy = header + ["TYPE"], widths + [20], legacy + [20]
    if opts.state is not None:
        header, widths, legacy = header + ["STATE"], widths + [20], legacy + [0]
    rows = [[g, *([kind.capitalize() or "Unknown"] if opts.type is not None else []),
             *([state] if opts.state is not None else [])] for g, kind, state in groups]
    if out.legacy:
        out.table(header, rows, legacy)
    else:                                   # printGroupInfo: every column padded, no blank line
        out.lines([" ".join(c.ljust(w) for c, w in zip(r, widths)) for r in [header, *rows]])
    return 0


def _filter_values(text: str | None, valid: tuple[str, ...], what: str) -> list[str]:
    """The values of a --state or --type filter, or Kafka's IllegalArgumentException text."""
    if not text:
        return []
    known = {v.lower(): v for v in valid}
    wanted = [v.strip().lower() for v in text.split(",")]
    if any(w not in known for w in wanted):
        shown = ", ".join(v if what == "state" else v.capitalize() for v in valid)
        noun = "state" if what == "state" else "types"
        raise UsageError(f"Invalid {noun} list '{text}'. Valid {what}s are: {shown}")
    return [known[w] for w in wanted]


# --------------------------------------------------------------------------- --describe

def cmd_describe(cluster: Cluster, opts: Options, out: Output) -> int:
    described = []
    for group_id in sorted(_group_ids(cluster, opts)):
        coordinator, label = coordinator_of(cluster, group_id)
        group = describe_group(coordinator, group_id)
        if group.not_found and not out.legacy:
            # Kafka's admin client fails the whole describe with GroupIdNotFoundException
            raise CommandFailed(exception_text(ErrorCode.GROUP_ID_NOT_FOUND, group.not_found))
        described.append((group, coordinator, label))
    status = 0
    for group, coordinator, label in described:
        if opts.view == "state":
            status |= _describe_state(group, label, opts, out)
        elif opts.view == "members":
            status |= _describe_members(group, opts, out)
        else:
            status |= _describe_offsets(cluster, coordinator, group, opts, out)
    return status


def _announce(group: Group, rows: int, out: Output) -> bool:
    """Kafka's shouldPrintMemberState: the state notice; whether there is a table to print."""
    state = group.state.lower()
    if state in ("dead", ""):
        out.error(f"Consumer group '{group.group_id}' does not exist.")
        return False
    if state == "empty":
        out.notice(f"Consumer group '{group.group_id}' has no active members.")
    elif state in REBALANCING:
        out.notice(f"Warning: Consumer group '{group.group_id}' is rebalancing.")
    return rows > 0


def _failed(out: Output, group: Group) -> int:
    """The older layout's exit code for a group that does not exist (Kafka's tool exits 0)."""
    return 1 if out.legacy and group.state.lower() in ("dead", "") else 0


def _describe_state(group: Group, label: str, opts: Options, out: Output) -> int:
    if not _announce(group, 1, out):
        return _failed(out, group)
    header = ["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE"]
    row = [group.group_id, label, group.protocol or "-", group.state]
    widths = [widest(15, [group.group_id]), widest(25, [label]), 20, 20]
    if opts.verbose:                        # a consumer group's epochs; a classic group has none
        header += ["GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH"]
        row += [dash(group.group_epoch), dash(group.assignment_epoch)]
        widths += [15, 25]
    out.table(header + ["#MEMBERS"], [row + [len(group.members)]], widths + [0],
              legacy_widths=[15, 25, 25, 20] + ([15, 25] if opts.verbose else []) + [0])
    return 0


def _assignment(partitions: list[TP]) -> str:
    """topic:0,1;other:2 — Kafka's getAssignmentString."""
    by_topic: dict[str, list[int]] = {}
    for t, p in partitions:
        by_topic.setdefault(t, []).append(p)
    return ";".join(sorted(f"{t}:{','.join(str(p) for p in sorted(ps))}" for t, ps in by_topic.items())) or "-"


def _describe_members(group: Group, opts: Options, out: Output) -> int:
    shown = _announce(group, len(group.members), out)
    if out.legacy and not shown:
        return _failed(out, group)
    members = group.members if shown else []
    with_instance = any(m.group_instance_id for m in members)
    header = ["GROUP", "CONSUMER-ID", *(["GROUP-INSTANCE-ID"] if with_instance else []), "HOST",
              "CLIENT-ID", "#PARTITIONS"]
    rows = [[group.group_id, m.member_id, *([m.group_instance_id or ""] if with_instance else []),
             m.host, m.client_id, len(m.partitions)] for m in members]
    widths = [widest(15, [group.group_id]), widest(15, (m.member_id for m in members)),
              *([widest(17, (m.group_instance_id or "" for m in members))] if with_instance else []),
              widest(15, (m.host for m in members)), widest(15, (m.client_id for m in members)), 15]
    if opts.verbose:                        # a classic group's members have no epochs or targets
        current = [_assignment(m.partitions) for m in members]
        targets = [_assignment(m.target or []) for m in members]
        header += ["CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"]
        rows = [r + [dash(m.member_epoch), a, dash(group.assignment_epoch), t]
                for r, m, a, t in zip(rows, members, current, targets)]
        widths += [15, widest(20, current), 15, widest(20, targets)]
        if any(m.upgraded is False for m in members):     # a consumer group with classic members
            header.append("UPGRADED")
            rows = [r + [dash(None if m.upgraded is None else str(m.upgraded).lower())]
                    for r, m in zip(rows, members)]
            widths.append(0)
    else:
        header, rows, widths = header + [""], [r + [""] for r in rows], widths + [0]
    if rows or not out.legacy:
        out.table(header, rows, widths, pad_last=True)
    return 0


def _describe_offsets(cluster: Cluster, coordinator: Connection, group: Group, opts: Options,
                      out: Output) -> int:
    committed = fetch_committed(coordinator, group.group_id)
    if out.legacy and group.state.lower() == "dead" and committed:
        group.state = "Empty"               # offsets but no group metadata: shown as Empty
    owned = [(m, tp) for m in sorted(group.members, key=lambda m: -len(m.partitions))
             for tp in sorted(m.partitions)]
    owners = {tp for _, tp in owned}
    rows_for = owned + [(None, tp) for tp in sorted(committed) if tp not in owners]
    if not _announce(group, len(rows_for), out):
        return _failed(out, group)
    end = list_offsets(cluster, [tp for _, tp in rows_for], LATEST)
    rows = []
    for m, tp in rows_for:
        current, epoch = committed.get(tp, (None, -1))
        last = end.get(tp)
        lag = last - current if current is not None and last is not None else None
        rows.append([group.group_id, tp[0], tp[1], *([dash(epoch if epoch >= 0 else None)] if opts.verbose else []),
                     dash(current), dash(last), dash(lag),
                     *((m.member_id, m.host, m.client_id) if m else ("-", "-", "-"))])
    header = ["GROUP", "TOPIC", "PARTITION", *(["LEADER-EPOCH"] if opts.verbose else []),
              "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"]
    widths = [widest(15, [group.group_id]), widest(15, (tp[0] for _, tp in rows_for)), 10,
              *([15] if opts.verbose else []), 15, 15, 15,
              widest(15, (m.member_id for m, _ in rows_for if m)), widest(15, (m.host for m, _ in rows_for if m)), 0]
    out.table(header, rows, widths)
    return 0


# --------------------------------------------------------------------------- --delete

def cmd_delete(cluster: Cluster, opts: Options, out: Output) -> int:
    groups = _group_ids(cluster, opts)
    by_coordinator: dict[Connection, list[str]] = {}
    for group in groups:
        by_coordinator.setdefault(coordinator_of(cluster, group)[0], []).append(group)
    results: dict[str, ErrorCode] = {}
    for coordinator, names in by_coordinator.items():
        results.update(delete_groups(coordinator, names))
    failed = {g: results[g] for g in groups if results.get(g, ErrorCode.NONE) != ErrorCode.NONE}
    deleted = [g for g in groups if g not in failed]
    if not failed:
        out.lines([f"Deletion of requested consumer groups ({', '.join(_quoted(g) for g in deleted)}) was successful."])
        return 0
    out.error("Deletion of some consumer groups failed:")
    detail = (lambda code: code.name) if out.legacy else exception_text
    lines = [f"* Group '{g}' could not be deleted due to: {detail(code)}" for g, code in failed.items()]
    if out.legacy:
        for line in lines:
            out.stderr(line)
        return 1
    if deleted:
        lines += ["", f"These consumer groups were deleted successfully: {', '.join(_quoted(g) for g in deleted)}"]
    out.lines(lines)
    return 0


def _quoted(group: str) -> str:
    return f"'{group}'"


# --------------------------------------------------------------------------- --delete-offsets

def cmd_delete_offsets(cluster: Cluster, opts: Options, out: Output) -> int:
    group = opts.groups[0]
    results: dict[TP, str] = {}
    partitions: list[TP] = []
    for topic in dict.fromkeys(opts.topics):
        if ":" in topic:
            partitions += topic_with_partitions(topic)
            continue
        try:
            partitions += topic_partitions(cluster, topic)
        except GroupsError:
            unknown = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            results[(topic, -1)] = f"Error: {exception_text(unknown)}"
    partitions = list(dict.fromkeys(partitions))
    coordinator, _ = coordinator_of(cluster, group)
    top, per_partition = delete_offsets(coordinator, group, partitions)
    if top == ErrorCode.NONE:
        top = next((code for code in per_partition.values() if code != ErrorCode.NONE), top)
    for tp in partitions:
        code = per_partition.get(tp, top)
        results[tp] = "Successful" if code == ErrorCode.NONE else f"Error: {exception_text(code)}"
    offsets_deleted(out, group, top)
    ordered = sorted(results.items(), key=lambda item: f"{item[0][0]}{item[0][1]}")
    rows = [[t, p if p >= 0 else "-", status] for (t, p), status in ordered]
    out.table(["TOPIC", "PARTITION", "STATUS"], rows, [widest(15, (t for (t, _) in results)), 10, 15],
              pad_last=True)
    return 0


def offsets_deleted(out: Output, group: str, top: ErrorCode) -> None:
    """What Kafka's consumer and streams tools say of an offset deletion, by its first error."""
    if top == ErrorCode.NONE:
        out.lines([f"Request succeeded for deleting offsets from group {group}."])
    elif top in (ErrorCode.INVALID_GROUP_ID, ErrorCode.GROUP_ID_NOT_FOUND,
                 ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.NON_EMPTY_GROUP):
        out.error(error_message(top))
    elif top in (ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                 ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
        out.error("Encountered some partition-level error, see the follow-up details.")
    else:
        out.error(f"Encountered some unknown error: {top.name}")


def states_filter(text: str, valid: dict[str, str]) -> list[str]:
    """The share and streams tools' groupStatesFromString (nothing: every state); ``valid``:
    the lower-case names GroupState.parse accepts -> the state (Kafka lists them in a Set.of's
    order, which each JVM draws at random; here, as ``valid`` has them)."""
    if not text:
        return []
    wanted = [s.strip().lower() for s in text.split(",")]
    if any(w not in valid for w in wanted):
        raise UsageError(f"Invalid state list '{text}'. Valid states are: {', '.join(valid.values())}")
    return [valid[w] for w in dict.fromkeys(wanted)]


def topic_with_partitions(arg: str) -> list[TP]:
    """``topic:0,1,2`` (OffsetsUtils.parseTopicsWithPartitions)."""
    parts = arg.split(":")
    if len(parts) != 2 or not parts[1]:
        raise UsageError(f"Invalid topic arg '{arg}', expected topic name and partitions")
    found = []
    for p in parts[1].split(","):
        try:
            found.append((parts[0], int(p)))
        except ValueError:
            raise UsageError(f"Invalid partition '{p}' specified in topic arg '{arg}''") from None
    return found


# --------------------------------------------------------------------------- --reset-offsets

def cmd_reset_offsets(cluster: Cluster, opts: Options, out: Output) -> int:
    plans: dict[str, dict[TP, int]] = {}
    file_plan = _read_plan(opts) if opts.scenario == "from-file" else None
    for group_id in _group_ids(cluster, opts):
        coordinator, _ = coordinator_of(cluster, group_id)
        group = describe_group(coordinator, group_id)
        if group.state not in ("Empty", "Dead", ""):
            message = (f"Assignments can only be reset if the group '{group_id}' is inactive, "
                       f"but the current state is {group.state}.")
            if out.legacy:
                raise GroupsError(message)
            out.error(message)
            plans[group_id] = {}
            continue
        plans[group_id] = _reset_group(cluster, coordinator, group_id, opts, out, file_plan)
    if out.legacy and not (opts.execute or opts.dry_run):
        warn(NO_EXECUTE_WARNING)            # the older syntax warns once the plan is known
    if opts.export:
        single = len(opts.groups) == 1
        out.lines(["".join(f"{'' if single else g + ','}{t},{p},{off}\n"
                           for g, plan in plans.items() for (t, p), off in sorted(plan.items()))])
        return 0
    rows = [[g, t, p, off] for g, plan in plans.items() for (t, p), off in sorted(plan.items())]
    if plans:
        out.table(["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"], rows, [30, 30, 10, 15], pad_last=True)
    elif not out.legacy:
        out.lines([""])
    return 0


def _reset_group(cluster: Cluster, coordinator: Connection, group: str, opts: Options, out: Output,
                 file_plan: dict[str, dict[TP, int]] | None) -> dict[TP, int]:
    if file_plan is not None:
        if group not in file_plan:
            out.error(f"No reset plan for group {group} found.")
            return {}
        targets = _clamp(cluster, file_plan[group])
    else:
        committed = {tp: off for tp, (off, _) in fetch_committed(coordinator, group).items()}
        targets = reset_targets(cluster, _scope(cluster, opts, committed), committed, opts, out)
    if opts.execute:
        commit_offsets(coordinator, group, targets)
    return targets


def _scope(cluster: Cluster, opts: Options, committed: dict[TP, int]) -> list[TP]:
    if opts.all_topics:
        return sorted(committed)
    if not opts.topics:
        raise UsageError("One of the reset scopes should be defined: --all-topics, --topic.")
    named = [topic_with_partitions(t) for t in opts.topics if ":" in t]
    whole = [topic_partitions(cluster, t) for t in opts.topics if ":" not in t]
    return list(dict.fromkeys(tp for tps in named + whole for tp in tps))


def reset_targets(cluster: Cluster, partitions: list[TP], committed: dict[TP, int], opts: Options,
             out: Output) -> dict[TP, int]:
    """OffsetsUtils' prepareOffsetsToReset for one scenario."""
    scenario = opts.scenario
    if scenario == "to-offset":
        return _clamp(cluster, {tp: opts.number for tp in partitions})
    if scenario == "to-earliest":
        return _log_offsets(cluster, partitions, EARLIEST, "Error getting starting offset")
    if scenario == "to-latest":
        return _log_offsets(cluster, partitions, LATEST, "Error getting ending offset")
    if scenario == "shift-by":
        for tp in partitions:
            if tp not in committed:
                raise UsageError(f"Cannot shift offset for partition {tp_name(tp)} since there is "
                                 "no current committed offset")
        return _clamp(cluster, {tp: committed[tp] + opts.number for tp in partitions})
    if scenario in ("to-datetime", "by-duration"):
        if scenario == "to-datetime":
            timestamp = parse_datetime(opts.value)
        else:
            timestamp = int(time.time() * 1000) - int(parse_duration(opts.value).total_seconds() * 1000)
        return _offsets_for_time(cluster, partitions, timestamp, out)
    # to-current: the committed offset, the log end where there is none
    latest = _log_offsets(cluster, [tp for tp in partitions if tp not in committed], LATEST,
                          "Error getting ending offset")
    return {tp: committed.get(tp, latest.get(tp)) for tp in partitions}


def _log_offsets(cluster: Cluster, partitions: list[TP], spec: int, failure: str) -> dict[TP, int]:
    found = list_offsets(cluster, partitions, spec)
    for tp in partitions:
        if tp not in found:
            raise UsageError(f"{failure} of topic partition: {tp_name(tp)}")
    return {tp: found[tp] for tp in partitions}


def _clamp(cluster: Cluster, requested: dict[TP, int]) -> dict[TP, int]:
    """OffsetsUtils.checkOffsetsRange: into [log start, log end], with Kafka's warning."""
    tps = list(requested)
    low = list_offsets(cluster, tps, EARLIEST)
    high = list_offsets(cluster, tps, LATEST)
    clamped = {}
    for tp, offset in requested.items():
        if tp not in high:
            raise CommandFailed(exception_text(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
        if offset > high[tp]:
            log.warning("New offset (%d) is higher than latest offset for topic partition %s. "
                        "Value will be set to %d.", offset, tp_name(tp), high[tp])
            offset = high[tp]
        elif tp in low and offset < low[tp]:
            log.warning("New offset (%d) is lower than earliest offset for topic partition %s. "
                        "Value will be set to %d.", offset, tp_name(tp), low[tp])
            offset = low[tp]
        clamped[tp] = offset
    return clamped


def _offsets_for_time(cluster: Cluster, partitions: list[TP], timestamp: int, out: Output) -> dict[TP, int]:
    found = list_offsets(cluster, partitions, timestamp)
    missing = [tp for tp in partitions if found.get(tp, -1) < 0]
    for t, p in missing:
        out.lines(["", f"Warn: Partition {p} from topic {t} is empty. Falling back to latest known offset."])
    found.update(list_offsets(cluster, missing, LATEST))
    for tp in partitions:
        if found.get(tp, -1) < 0:
            raise UsageError(f"Error getting offset by timestamp of topic partition: {tp_name(tp)}")
    return {tp: found[tp] for tp in partitions}


def _read_plan(opts: Options) -> dict[str, dict[TP, int]]:
    """A --from-file CSV: ``topic,partition,offset`` for one --group, else ``group,topic,...``."""
    try:
        with open(opts.value, encoding="utf-8") as f:
            lines = [line.strip() for line in f.read().split("\n") if line.strip()]
    except OSError as e:
        raise CommandFailed(f"java.nio.file.NoSuchFileException: {opts.value}"
                            if isinstance(e, FileNotFoundError) else str(e)) from None
    single = len(opts.groups) == 1 and bool(lines) and len(lines[0].split(",")) == 3
    plan: dict[str, dict[TP, int]] = {}
    for line in lines:
        fields = line.split(",")
        try:
            group, topic, partition, offset = ([opts.groups[0], *fields] if single else fields)
            plan.setdefault(group, {})[(topic, int(partition))] = int(offset)
        except ValueError:
            raise CommandFailed(f"bad line in {opts.value}: {line!r}") from None
    return plan


COMMANDS = {"list": cmd_list, "describe": cmd_describe, "delete": cmd_delete,
            "reset-offsets": cmd_reset_offsets, "delete-offsets": cmd_delete_offsets}
