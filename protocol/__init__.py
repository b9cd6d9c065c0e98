"""Kafka's wire protocol: frames, headers and every message version, with no I/O.

Bytes in, frozen dataclasses out (and back). Declarations live in
``protocol.messages``; each version's codec is built from them with
``construct`` and compiled on first use. The names below are imported from their modules
on first use, so importing one light module (``protocol.frames``) loads nothing else.
"""

from importlib import import_module

_HOMES = {
    "ApiKey": "api_keys", "api_name": "api_keys",
    "DecodeError": "exceptions", "EncodeError": "exceptions", "FrameTooLarge": "exceptions",
    "ProtocolError": "exceptions", "UnsupportedVersion": "exceptions",
    "DEFAULT_MAX_FRAME": "frames", "FrameBuffer": "frames",
    "Request": "header", "RequestHeader": "header", "decode_request": "header",
    "decode_response": "header", "encode_request": "header", "encode_response": "header",
    "encode_response_parts": "header",
    "DATA": "messages", "REQUESTS": "messages", "RESPONSES": "messages",
    "API_TABLE": "registry", "ApiSpec": "registry",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module 'protocol' has no attribute {name!r}")
    value = getattr(import_module(f"protocol.{_HOMES[name]}"), name)
    globals()[name] = value
    return value
