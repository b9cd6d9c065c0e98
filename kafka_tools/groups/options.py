"""The command line of ``groupbroker groups``, in either of its two syntaxes, as one :class:`Options`.

* kafka-consumer-groups.sh's own: ``--bootstrap-server H:P --describe --group G --members``;
  options anywhere, ``--opt value`` or ``--opt=value``, checked in the order and with the words
  of Kafka's ConsumerGroupCommandOptions.checkArgs (first failure wins).
* groupbroker's older subcommands: ``[--bootstrap-server H:P] describe G --members``.

Either way the commands see the same :class:`Options`; ``legacy`` only picks the output layout.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field

ACTIONS = ("list", "describe", "delete", "reset-offsets", "delete-offsets")
SCENARIOS = ("to-offset", "to-datetime", "by-duration", "to-earliest", "to-latest", "to-current",
             "shift-by", "from-file")
LEGACY_COMMANDS = ("list", "describe", "delete", "reset-offsets")
DEFAULT_TIMEOUT_MS = 30_000
NO_EXECUTE_WARNING = (
    "WARN: No action will be performed as the --execute option is missing. In a future major "
    "release, the default behavior of this command will be to prompt the user before executing "
    "the reset rather than doing a dry run. You should add the --dry-run option explicitly if you "
    "are scripting this command and want to keep the current default behavior without prompting.")

# name -> how it takes a value: None (a flag), "required" or "optional"
_SPECS: dict[str, str | None] = {
    "bootstrap-server": "required", "group": "required", "topic": "required", "all-topics": None,
    "list": None, "describe": None, "all-groups": None, "delete": None, "timeout": "required",
    "command-config": "required", "reset-offsets": None, "delete-offsets": None, "dry-run": None,
    "execute": None, "export": None, "to-offset": "required", "from-file": "required",
    "to-datetime": "required", "by-duration": "required", "to-earliest": None, "to-latest": None,
    "to-current": None, "shift-by": "required", "members": None, "verbose": None, "offsets": None,
    "state": "optional", "type": "optional", "help": None, "version": None,
}
_MULTI = {"group", "topic", "input-topic", "delete-internal-topic"}      # options given more than once
_AVAILABLE_IF = {"members": ("describe",), "verbose": ("describe",), "offsets": ("describe",),
                 "state": ("describe", "list"), "type": ("list",)}
_NUMERIC = ("to-offset", "shift-by", "timeout")

HELP = """\
groupbroker groups: list, describe and delete consumer groups, and reset or delete their
committed offsets, over the Kafka protocol (kafka-consumer-groups.sh's options).

Actions (exactly one):
  --list                 the consumer groups (--state [S,..] / --type [T,..] add columns, filter)
  --describe             offsets and lag (--offsets, the default), --members or --state of
                         --group G (repeatable) or --all-groups; --verbose adds columns (a
                         consumer group's epochs and target assignments)
  --delete               delete --group G (repeatable) or --all-groups (inactive groups only)
  --reset-offsets        reset the committed offsets of inactive groups: scope --topic T[:P,..]
                         (repeatable) or --all-topics; one of --to-earliest, --to-latest,
                         --to-offset N, --shift-by N, --to-datetime YYYY-MM-DDTHH:mm:SS.sss[ZONE],
                         --by-duration PnDTnHnMnS, --to-current, --from-file CSV; only --execute
                         commits (--dry-run, the default, prints the plan; --export as CSV)
  --delete-offsets       delete the committed offsets of --group G for --topic T[:P,..]
Other options:
  --bootstrap-server H:P   required: the broker to ask
  --timeout MS             how long to wait for a broker (default 30000)
  --command-config FILE    accepted for compatibility (a properties file; not applied)
  --help, --version

The older form still works: groupbroker groups [--bootstrap-server H:P] list [--state [S]] [--type [T]] |
describe G [--members|--state] [--verbose] | delete G | reset-offsets G --topic T
(--to-earliest|--to-latest|--to-offset N) [--execute|--dry-run]
"""


class UsageError(Exception):
    """A command line Kafka's tool refuses: the message, then the help, on stderr; exit 1."""


@dataclass
class Options:
    action: str
    bootstrap_server: str = "127.0.0.1:9092"
    legacy: bool = False
    groups: list[str] = field(default_factory=list)
    all_groups: bool = False
    topics: list[str] = field(default_factory=list)
    all_topics: bool = False
    view: str = "offsets"                  # describe: offsets, members or state
    verbose: bool = False
    state: str | None = None               # list: None (no column), "" (column) or a filter
    type: str | None = None                # list: likewise
    scenario: str | None = None            # reset-offsets: one of SCENARIOS
    value: str | None = None               # the scenario's argument
    execute: bool = False
    dry_run: bool = False
    export: bool = False
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    command_config: str | None = None
    share: bool = False                    # kafka-share-groups.sh's tool (``--share``)
    streams: bool = False                  # kafka-streams-groups.sh's tool (``--streams``)
    delete_internal_topics: list[str] = field(default_factory=list)    # streams: --delete-internal-topic
    all_internal_topics: bool = False      # streams: --delete-all-internal-topics

    @property
    def number(self) -> int:
        """The scenario's argument as the integer --to-offset and --shift-by take."""
        return int(self.value)


def is_legacy(argv: list[str]) -> bool:
    """True when the first word after any --bootstrap-server is one of the older subcommands."""
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--bootstrap-server":
            i += 2
        elif word.startswith("--bootstrap-server="):
            i += 1
        else:
            return word in LEGACY_COMMANDS
    return False


def parse(argv: list[str]) -> Options:
    """Options from either syntax; UsageError (Kafka's words) for what Kafka's tool refuses."""
    return parse_legacy(argv) if is_legacy(argv) else parse_kafka(argv)


# --------------------------------------------------------------------------- Kafka's syntax

def spec(name: str) -> str:
    return f"[{name}]"                      # how joptsimple prints an option in messages


def _tokens(argv: list[str], specs: dict[str, str | None] = _SPECS) -> dict[str, list[str | None]]:
    """Every option given, with its values in order (None for a flag or an absent optional);
    ``specs``: the tool's options (name -> None, "required" or "optional")."""
    seen: dict[str, list[str | None]] = {}
    i = 0
    while i < len(argv):
        word = argv[i]
        i += 1
        if word == "--":
            break                           # what follows is not options; Kafka ignores it
        if not word.startswith("-") or word == "-" or is_number(word):
            continue                        # a stray word: joptsimple keeps it, the tool ignores it
        name, eq, inline = word.lstrip("-").partition("=")
        if name not in specs:
            raise UsageError(f"{name} is not a recognized option")
        kind = specs[name]
        if kind is None:
            if eq:
                raise UsageError(f"Option {name} does not take an argument")
            value = None
        elif eq:
            value = inline
        elif kind == "required":
            if i >= len(argv):
                raise UsageError(f"Option {name} requires an argument")
            value, i = argv[i], i + 1
        elif i < len(argv) and not (argv[i].startswith("-") and not is_number(argv[i])):
            value, i = argv[i], i + 1
        else:
            value = None
        seen.setdefault(name, []).append(value)
    return seen


def is_number(word: str) -> bool:
    try:
        int(word)
    except ValueError:
        return False
    return True


def read_options(argv: list[str], specs: dict[str, str | None], available_if: dict[str, tuple[str, ...]]
                 ) -> dict[str, list[str | None]]:
    """The options given, refused as joptsimple refuses them: unknown, missing an argument,
    unavailable without the options they need, or given twice with a value."""
    seen = _tokens(argv, specs)
    unavailable = [n for n, needs in available_if.items() if n in seen and not any(o in seen for o in needs)]
    if unavailable:
        raise UsageError(f"Option(s) [{', '.join(unavailable)}] are unavailable given other options "
                         "on the command line")
    for name, values in seen.items():
        if name not in _MULTI and len(values) > 1 and specs[name] is not None:
            raise UsageError(f"Found multiple arguments for option {name}, but you asked for only one")
    return seen


def parse_kafka(argv: list[str]) -> Options:
    seen = read_options(argv, _SPECS, _AVAILABLE_IF)
    has = seen.__contains__

    def one(name: str) -> str | None:
        return seen[name][0] if has(name) else None

    if has("help") or not argv:             # Kafka prints the help on stderr and exits 1 here
        raise UsageError("This tool helps to list all consumer groups, describe a consumer group, "
                         "delete consumer group info, or reset consumer group offsets.")
    if has("version"):
        return Options(action="version")
    _check_args(seen)
    actions = [a for a in ACTIONS if has(a)]
    if len(actions) != 1:
        raise UsageError("Command must include exactly one action: "
                         + ", ".join(f"--{a}" for a in ACTIONS))
    for name in _NUMERIC:
        if has(name) and not is_number(one(name)):
            raise UsageError(f"Cannot parse argument '{one(name)}' of option {name}")
    scenario = next((s for s in SCENARIOS if has(s)), None)
    view = next((v for v in ("members", "state") if has(v)), "offsets")
    return Options(
        action=actions[0], bootstrap_server=one("bootstrap-server"),
        groups=[g for g in seen.get("group", []) if g is not None], all_groups=has("all-groups"),
        topics=[t for t in seen.get("topic", []) if t is not None], all_topics=has("all-topics"),
        view=view, verbose=has("verbose"),
        state=(one("state") or "") if has("state") and actions[0] == "list" else None,
        type=(one("type") or "") if has("type") else None,
        scenario=scenario, value=one(scenario) if scenario else None,
        execute=has("execute"), dry_run=has("dry-run"), export=has("export"),
        timeout_ms=int(one("timeout")) if has("timeout") else DEFAULT_TIMEOUT_MS,
        command_config=one("command-config"))


def _check_args(seen: dict[str, list[str | None]]) -> None:
    """ConsumerGroupCommandOptions.checkArgs: the same checks in the same order."""
    has = seen.__contains__
    scope = f"{spec('group')}, {spec('all-groups')}"
    if not has("bootstrap-server"):
        raise UsageError(f'Missing required argument "{spec("bootstrap-server")}"')
    check_describe(seen, scope)
    if has("delete"):
        if not has("group") and not has("all-groups"):
            raise UsageError(f"Option {spec('delete')} takes one of these options: {scope}")
        if has("topic"):
            raise UsageError("The consumer does not support topic-specific offset deletion from a "
                             "consumer group.")
    if has("delete-offsets") and not (has("group") and has("topic")):
        raise UsageError(f"Option {spec('delete-offsets')} takes the following options: "
                         f"{spec('group')}, {spec('topic')}")
    if has("reset-offsets"):
        _check_reset(seen, scope)
    invalid_with(seen, "group", ("all-groups", "list"))
    invalid_with(seen, "topic", ("list", "describe"))


def check_describe(seen: dict[str, list[str | None]], scope: str) -> None:
    """Both tools' checks of --describe (``scope``: how the tool lists --group and --all-groups)."""
    if "describe" not in seen:
        return
    if "group" not in seen and "all-groups" not in seen:
        raise UsageError(f"Option {spec('describe')} takes one of these options: {scope}")
    views = ("members", "offsets", "state")
    if sum(v in seen for v in views) > 1:
        raise UsageError(f"Option {spec('describe')} takes at most one of these options: "
                         + ", ".join(spec(v) for v in views))
    if "state" in seen and seen["state"][0] is not None:
        raise UsageError(f"Option {spec('describe')} does not take a value for {spec('state')}")


def _check_reset(seen: dict[str, list[str | None]], scope: str) -> None:
    has = seen.__contains__
    if has("dry-run") and has("execute"):
        raise UsageError(f"Option {spec('reset-offsets')} only accepts one of {spec('execute')} "
                         f"and {spec('dry-run')}")
    if not has("dry-run") and not has("execute"):
        warn(NO_EXECUTE_WARNING)
    if not has("group") and not has("all-groups"):
        raise UsageError(f"Option {spec('reset-offsets')} takes one of these options: {scope}")
    for scenario in SCENARIOS:
        invalid_with(seen, scenario, tuple(s for s in SCENARIOS if s != scenario))


def invalid_with(seen: dict, used: str, others: tuple[str, ...]) -> None:
    """CommandLineUtils.checkInvalidArgs."""
    if used in seen:
        for other in others:
            if other in seen:
                raise UsageError(f'Option "{spec(used)}" can\'t be used with option "{spec(other)}"')


def warn(text: str) -> None:
    """A line on stderr, as Kafka's tool prints its warnings (System.err, not a logger)."""
    sys.stderr.write(text + "\n")


# --------------------------------------------------------------------------- the older subcommands

def _legacy_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="groupbroker groups", allow_abbrev=False)
    parser.add_argument("--bootstrap-server", default="127.0.0.1:9092", metavar="HOST:PORT")
    sub = parser.add_subparsers(dest="command", required=True)
    lst = sub.add_parser("list", help="list the groups")
    lst.add_argument("--state", nargs="?", const="", metavar="S",
                     help="show the STATE column; with S (comma-separated), only groups in those states")
    lst.add_argument("--type", nargs="?", const="", metavar="T",
                     help="show the TYPE column; with T (consumer, classic; comma-separated), only "
                          "groups of those types")
    desc = sub.add_parser("describe", help="offsets, members or state of a group")
    desc.add_argument("group")
    view = desc.add_mutually_exclusive_group()
    view.add_argument("--members", action="store_true", help="one line per member")
    view.add_argument("--state", dest="state_view", action="store_true", help="the group's state")
    desc.add_argument("--verbose", action="store_true",
                      help="more columns (a consumer group's epochs and target assignments)")
    delete = sub.add_parser("delete", help="delete an empty group and its offsets")
    delete.add_argument("group")
    reset = sub.add_parser("reset-offsets", help="reset the committed offsets of an inactive group")
    reset.add_argument("group")
    reset.add_argument("--topic", required=True)
    to = reset.add_mutually_exclusive_group(required=True)
    to.add_argument("--to-earliest", action="store_true")
    to.add_argument("--to-latest", action="store_true")
    to.add_argument("--to-offset", type=int, metavar="N")
    mode = reset.add_mutually_exclusive_group()
    mode.add_argument("--execute", action="store_true", help="commit the new offsets")
    mode.add_argument("--dry-run", action="store_true",
                      help="print the new offsets, commit nothing (also the default, with a warning)")
    return parser


def parse_legacy(argv: list[str]) -> Options:
    """The older subcommands (argparse exits 2 on a bad one, as it always did)."""
    args = _legacy_parser().parse_args(argv)
    opts = Options(action=args.command, bootstrap_server=args.bootstrap_server, legacy=True)
    if args.command == "list":
        opts.state, opts.type = args.state, args.type
        return opts
    opts.groups = [args.group]
    if args.command == "describe":
        opts.view = "members" if args.members else "state" if args.state_view else "offsets"
        opts.verbose = args.verbose
    elif args.command == "reset-offsets":
        opts.topics = [args.topic]
        opts.execute, opts.dry_run = args.execute, args.dry_run
        if args.to_offset is not None:
            opts.scenario, opts.value = "to-offset", str(args.to_offset)
        else:
            opts.scenario = "to-earliest" if args.to_earliest else "to-latest"
    return opts
