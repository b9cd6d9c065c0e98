"""kafka-share-groups.sh's command line, read into the same :class:`Options` as the consumer
tool's (with ``share`` set): ``groupbroker groups --share --bootstrap-server H:P --describe
--group G --members``. Its options are a subset of kafka-consumer-groups.sh's; the checks and
their words are Kafka's ShareGroupCommandOptions.checkArgs, in its order.
"""

from __future__ import annotations

from .options import (DEFAULT_TIMEOUT_MS, Options, UsageError, check_describe, invalid_with, is_number,
                      read_options, spec)

ACTIONS = ("list", "describe", "delete", "reset-offsets", "delete-offsets")
SCENARIOS = ("to-datetime", "to-earliest", "to-latest")

_SPECS: dict[str, str | None] = {
    "bootstrap-server": "required", "group": "required", "topic": "required", "all-topics": None,
    "list": None, "describe": None, "all-groups": None, "delete": None, "timeout": "required",
    "command-config": "required", "reset-offsets": None, "delete-offsets": None, "dry-run": None,
    "execute": None, "to-datetime": "required", "to-earliest": None, "to-latest": None, "members": None,
    "offsets": None, "state": "optional", "verbose": None, "help": None, "version": None,
}
_AVAILABLE_IF = {"members": ("describe",), "offsets": ("describe",), "state": ("describe", "list"),
                 "verbose": ("describe",)}

HELP = """\
groupbroker groups --share: list, describe and delete share groups, and reset or delete their
start offsets, over the Kafka protocol (kafka-share-groups.sh's options).

Actions (exactly one):
  --list                 the share groups (--state [S,..] adds the STATE column and filters:
                         Stable, Empty, Dead)
  --describe             start offsets and lag (--offsets, the default), --members or --state of
                         --group G (repeatable) or --all-groups; --verbose adds columns
  --delete               delete --group G (repeatable) or --all-groups (Empty groups only)
  --reset-offsets        reset the start offsets of an inactive --group G: scope --topic T[:P,..]
                         (repeatable) or --all-topics; one of --to-earliest, --to-latest,
                         --to-datetime YYYY-MM-DDTHH:mm:SS.sss[ZONE]; --dry-run or --execute
  --delete-offsets       delete the share state of --group G for --topic T (repeatable)
Other options:
  --bootstrap-server H:P   required: the broker to ask
  --timeout MS             how long to wait for a broker (default 30000)
  --command-config FILE    accepted for compatibility (a properties file; not applied)
  --help, --version
"""


def parse_share(argv: list[str]) -> Options:
    """Options from kafka-share-groups.sh's syntax; UsageError (Kafka's words) for what its
    tool refuses."""
    seen = read_options(argv, _SPECS, _AVAILABLE_IF)
    has = seen.__contains__

    def one(name: str) -> str | None:
        return seen[name][0] if has(name) else None

    if has("help") or not argv:
        raise UsageError("This tool helps to list, describe, reset and delete share groups.")
    if has("version"):
        return Options(action="version", share=True)
    _check_args(seen)
    actions = [a for a in ACTIONS if has(a)]
    if len(actions) != 1:
        raise UsageError("Command must include exactly one action: "
                         + ", ".join(f"--{a}" for a in ACTIONS) + ".")
    if has("timeout") and not is_number(one("timeout")):
        raise UsageError(f"Cannot parse argument '{one('timeout')}' of option timeout")
    scenario = next((s for s in SCENARIOS if has(s)), None)
    return Options(
        action=actions[0], bootstrap_server=one("bootstrap-server"), share=True,
        groups=[g for g in seen.get("group", []) if g is not None], all_groups=has("all-groups"),
        topics=[t for t in seen.get("topic", []) if t is not None], all_topics=has("all-topics"),
        view=next((v for v in ("members", "state") if has(v)), "offsets"), verbose=has("verbose"),
        state=(one("state") or "") if has("state") and actions[0] == "list" else None,
        scenario=scenario, value=one(scenario) if scenario else None,
        execute=has("execute"), dry_run=has("dry-run"),
        timeout_ms=int(one("timeout")) if has("timeout") else DEFAULT_TIMEOUT_MS,
        command_config=one("command-config"))


def _check_args(seen: dict[str, list[str | None]]) -> None:
    """ShareGroupCommandOptions.checkArgs: the same checks in the same order."""
    has = seen.__contains__
    if not has("bootstrap-server"):
        raise UsageError(f'Missing required argument "{spec("bootstrap-server")}"')
    check_describe(seen, f"{spec('all-groups')}, {spec('group')}")
    if has("delete"):
        if not has("group") and not has("all-groups"):
            raise UsageError(f"Option {spec('delete')} takes the options {spec('group')} or {spec('all-groups')}")
        if has("all-groups") and has("group"):
            raise UsageError(f"Option {spec('delete')} takes either {spec('group')} or {spec('all-groups')}, "
                             "not both.")
        if has("topic"):
            raise UsageError(f"Option {spec('delete')} does not take the option: {spec('topic')}")
    if has("delete-offsets") and not (has("group") and has("topic")):
        raise UsageError(f"Option {spec('delete-offsets')} takes the following options: "
                         f"{spec('group')}, {spec('topic')}")
    if has("reset-offsets"):
        _check_reset(seen)
    invalid_with(seen, "group", ("all-groups", "list"))
    invalid_with(seen, "topic", ("list", "describe"))


def _check_reset(seen: dict[str, list[str | None]]) -> None:
    has, reset = seen.__contains__, spec("reset-offsets")
    if has("dry-run") and has("execute"):
        raise UsageError(f"Option {reset} only accepts one of {spec('execute')} and {spec('dry-run')}")
    if not has("dry-run") and not has("execute"):
        raise UsageError(f"Option {reset} takes the option: {spec('execute')} or {spec('dry-run')}")
    if not has("group"):
        raise UsageError(f"Option {reset} takes the option: {spec('group')}")
    if not has("topic") and not has("all-topics"):
        raise UsageError(f"Option {reset} takes one of these options: {spec('all-topics')}, {spec('topic')}")
    if not any(has(s) for s in SCENARIOS):
        raise UsageError(f"Option {reset} takes one of these options: " + ", ".join(spec(s) for s in SCENARIOS))
    for scenario in SCENARIOS:
        invalid_with(seen, scenario, tuple(s for s in SCENARIOS if s != scenario))
