"""Every message declaration: one module per API key, plus the consumer-protocol payloads.

``REQUESTS`` and ``RESPONSES`` map API key -> declaration; ``DATA`` maps name ->
declaration for the versioned payloads carried inside group messages. Modules
are found by listing this package, so adding an API is adding a module.
"""

from __future__ import annotations

import pkgutil
from importlib import import_module

from ..schema import Message

REQUESTS: dict[int, Message] = {}
RESPONSES: dict[int, Message] = {}
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
                _table[_msg.api_key] = _msg
