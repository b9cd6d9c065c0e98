"""Every message declaration: one module per API key, plus the consumer-protocol payloads.

``REQUESTS`` and ``RESPONSES`` map :class:`ApiKey` -> declaration (each checked against the enum); ``DATA`` maps name ->
declaration for the versioned payloads carried inside group messages. Modules
are found by listing this package, so adding an API is adding a module.
"""

from __future__ import annotations

import pkgutil
from importlib import import_module

from ..api_keys import ApiKey, check_declaration
from ..schema import Message

REQUESTS: dict[ApiKey, Message] = {}
RESPONSES: dict[ApiKey, Message] = {}
DATA: dict[str, Message] = {}

for _info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    _module = import_module(f"{__name__}.{_info.name}")
    for _msg in vars(_module).values():
        if isinstance(_msg, Message):
            _table = {"request": REQUESTS, "response": RESPONSES}.get(_msg.kind)
            if _table is None:
                DATA[_msg.name] = _msg
            else:
                assert _msg.api_key not in _table, f"{_msg.name}: api key declared twice"
                _table[check_declaration(_msg.api_key, _msg.name)] = _msg
