"""Kafka's one-entry JAAS configs (``listener.name.<l>.<mechanism>.sasl.jaas.config``):
``<LoginModule> <flag> key=value ... ;``, values quoted or bare, comments allowed."""

from __future__ import annotations

import re

from security.settings import SettingsError

_TOKEN = re.compile(r'\s*(?:(?P<quoted>"(?:[^"\\]|\\.)*")|(?P<punct>[=;])|(?P<word>[^\s=;"]+))')
_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
FLAGS = ("required", "requisite", "sufficient", "optional")


def parse_jaas(text: str, setting: str) -> tuple[str, dict[str, str]]:
    """(login module, options) of a JAAS config holding exactly one login module."""
    tokens, position, body = [], 0, _COMMENTS.sub(" ", text).strip()
    while position < len(body):
        match = _TOKEN.match(body, position)
        if match is None:
            raise SettingsError(f"{setting}: cannot read {body[position:position + 30]!r}")
        position = match.end()
        if match["quoted"] is not None:
            tokens.append(("value", re.sub(r"\\(.)", r"\1", match["quoted"][1:-1])))
        elif match["punct"]:
            tokens.append((match["punct"], match["punct"]))
        elif match["word"]:
            tokens.append(("value", match["word"]))
    if not tokens or tokens[-1][0] != ";":
        raise SettingsError(f"{setting}: JAAS config entry not terminated by semi-colon")
    if sum(1 for kind, _ in tokens if kind == ";") != 1:
        raise SettingsError(f"{setting}: JAAS config property contains more than one login module, should be 1 module")
    if len(tokens) < 3 or tokens[1][1].lower() not in FLAGS:
        raise SettingsError(f"{setting}: expected '<LoginModule> required key=value ... ;'")
    options, rest = {}, tokens[2:-1]
    while rest:
        if len(rest) < 3 or rest[1][0] != "=" or rest[0][0] != "value" or rest[2][0] != "value":
            raise SettingsError(f"{setting}: expected key=value options after the control flag")
        options[rest[0][1]] = rest[2][1]
        rest = rest[3:]
    return tokens[0][1], options
