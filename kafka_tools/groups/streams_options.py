"""kafka-streams-groups.sh's command line, read into the same :class:`Options` as the other
tools' (with ``streams`` set): ``groupbroker groups --streams --bootstrap-server H:P --describe
--group G --members``. The checks and their words are Kafka's StreamsGroupCommandOptions.checkArgs,
in its order; ``--input-topic`` and ``--all-input-topics`` fill the options' topics.
"""

from __future__ import annotations

from .options import (DEFAULT_TIMEOUT_MS, SCENARIOS, Options, UsageError, check_describe, invalid_with, is_number,
                      read_options, spec)

ACTIONS = ("list", "describe", "reset-offsets", "delete", "delete-offsets")

_SPECS: dict[str, str | None] = {
    "bootstrap-server": "required", "group": "required", "input-topic": "required", "all-input-topics": None,
    "list": None, "describe": None, "all-groups": None, "delete": None, "delete-offsets": None,
    "timeout": "required", "command-config": "required", "state": "optional", "members": None, "offsets": None,
    "reset-offsets": None, "to-offset": "required", "from-file": "required", "to-datetime": "required",
    "by-duration": "required", "to-earliest": None, "to-latest": None, "to-current": None, "shift-by": "required",
    "delete-internal-topic": "required", "delete-all-internal-topics": None, "verbose": None, "dry-run": None,
    "execute": None, "export": None, "help": None, "version": None,
}
_AVAILABLE_IF = {"members": ("describe",), "offsets": ("describe",), "state": ("describe", "list"),
                 "verbose": ("describe",)}
#: the reset specifications as the tool's HashSet of them iterates (16 buckets of the options'
#: hashes); to-datetime and from-file share a bucket, whose order each JVM draws
_SPEC_ORDER = ("to-offset", "to-current", "to-datetime", "from-file", "by-duration", "to-earliest", "to-latest",
               "shift-by")

HELP = """\
groupbroker groups --streams: list, describe and delete streams groups (KIP-1071), and reset or
delete their committed offsets, over the Kafka protocol (kafka-streams-groups.sh's options).

Actions (exactly one):
  --list                 the streams groups (--state [S,..] adds the STATE column and filters:
                         Empty, NotReady, Assigning, Reconciling, Stable, Dead)
  --describe             offset lag (--offsets, the default), --members (their tasks) or --state
                         of --group G (repeatable) or --all-groups; --verbose adds columns
  --delete               delete --group G (repeatable) or --all-groups (Empty groups only);
                         --delete-all-internal-topics deletes their internal topics too
  --reset-offsets        reset the committed offsets of inactive groups: scope --input-topic
                         T[:P,..] (repeatable) or --all-input-topics; one of --to-earliest,
                         --to-latest, --to-offset N, --shift-by N, --to-datetime, --by-duration,
                         --to-current, --from-file CSV; --dry-run or --execute (with
                         --delete-all-internal-topics or --delete-internal-topic T)
  --delete-offsets       delete the committed offsets of --group G for --input-topic T[:P,..] or
                         --all-input-topics
Other options:
  --bootstrap-server H:P   required: the broker to ask
  --timeout MS             how long to wait for a broker (default 30000)
  --command-config FILE    accepted for compatibility (a properties file; not applied)
  --help, --version
"""


def parse_streams(argv: list[str]) -> Options:
    """Options from kafka-streams-groups.sh's syntax; UsageError (Kafka's words) for what its
    tool refuses."""
    seen = read_options(argv, _SPECS, _AVAILABLE_IF)
    has = seen.__contains__

    def one(name: str) -> str | None:
        return seen[name][0] if has(name) else None

    if has("help") or not argv:
        raise UsageError("This tool helps to list, or describe streams groups.")
    if has("version"):
        return Options(action="version", streams=True)
    _check_args(seen)
    actions = [a for a in ACTIONS if has(a)]
    if len(actions) != 1:
        raise UsageError("Command must include exactly one action: --list, --describe, --delete, --reset-offsets, "
                         "or --delete-offsets.")
    for name in ("timeout", "to-offset", "shift-by"):
        if has(name) and not is_number(one(name)):
            raise UsageError(f"Cannot parse argument '{one(name)}' of option {name}")
    scenario = next((s for s in SCENARIOS if has(s)), None)
    return Options(
        action=actions[0], bootstrap_server=one("bootstrap-server"), streams=True,
        groups=[g for g in seen.get("group", []) if g is not None], all_groups=has("all-groups"),
        topics=[t for t in seen.get("input-topic", []) if t is not None], all_topics=has("all-input-topics"),
        view=next((v for v in ("members", "state") if has(v)), "offsets"), verbose=has("verbose"),
        state=(one("state") or "") if has("state") and actions[0] == "list" else None,
        scenario=scenario, value=one(scenario) if scenario else None,
        execute=has("execute"), dry_run=has("dry-run"), export=has("export"),
        delete_internal_topics=[t for t in seen.get("delete-internal-topic", []) if t is not None],
        all_internal_topics=has("delete-all-internal-topics"),
        timeout_ms=int(one("timeout")) if has("timeout") else DEFAULT_TIMEOUT_MS, command_config=one("command-config"))


def _check_args(seen: dict[str, list[str | None]]) -> None:
    """StreamsGroupCommandOptions.checkArgs: the same checks in the same order."""
    has = seen.__contains__
    scope = f"{spec('all-groups')}, {spec('group')}"
    if not has("bootstrap-server"):
        raise UsageError(f'Missing required argument "{spec("bootstrap-server")}"')
    check_describe(seen, scope)
    if has("delete"):
        if not has("group") and not has("all-groups"):
            raise UsageError(f"Option {spec('delete')} takes one of these options: {scope}")
        if has("input-topic") or has("all-input-topics"):
            raise UsageError("Kafka Streams does not support topic-specific offset deletion from a streams group.")
    if has("delete-offsets"):
        if not (has("input-topic") or has("all-input-topics")) or not has("group"):
            raise UsageError(f"Option {spec('delete-offsets')} takes the {spec('group')} and one of these options: "
                             f"{spec('all-input-topics')}, {spec('input-topic')}")
        if len(seen["group"]) > 1:
            raise UsageError(f"Option {spec('delete-offsets')} supports only one {spec('group')} at a time, but "
                             f"found: [{', '.join(seen['group'])}]")
    if has("reset-offsets"):
        if has("dry-run") and has("execute"):
            raise UsageError(f"Option {spec('reset-offsets')} only accepts one of {spec('execute')} and "
                             f"{spec('dry-run')}")
        if not has("dry-run") and not has("execute"):
            raise UsageError(f"Option {spec('reset-offsets')} takes the option: {spec('execute')} or {spec('dry-run')}")
        if not has("group") and not has("all-groups"):
            raise UsageError(f"Option {spec('reset-offsets')} takes one of these options: {scope}")
        for used in SCENARIOS:
            invalid_with(seen, used, tuple(s for s in _SPEC_ORDER if s != used))
    if has("delete-all-internal-topics"):
        if not has("reset-offsets") and not has("delete"):
            raise UsageError(f"Option {spec('delete-all-internal-topics')} takes one of these options: "
                             f"{spec('delete')}, {spec('reset-offsets')}")
        if has("reset-offsets") and not has("execute"):
            raise UsageError(f"Option {spec('delete-all-internal-topics')} takes {spec('execute')} when "
                             f"{spec('reset-offsets')} is used.")
    elif has("delete-internal-topic") and not (has("reset-offsets") and has("execute")):
        raise UsageError(f"Option {spec('delete-internal-topic')} takes {spec('reset-offsets')} when "
                         f"{spec('execute')} is used.")
    if (has("dry-run") or has("execute")) and not has("reset-offsets"):
        raise UsageError(f"Only Option {spec('reset-offsets')} accepts {spec('execute')} or {spec('dry-run')}")
    invalid_with(seen, "group", ("all-groups",))
    invalid_with(seen, "group", ("list",))
    invalid_with(seen, "input-topic", ("describe", "delete", "list"))
