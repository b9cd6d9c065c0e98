"""Kafka's wire protocol: frames, headers and every message version, with no I/O.

Bytes in, frozen dataclasses out (and back). Declarations live in
``protocol.messages``; each version's codec is built from them with
``construct`` and compiled on first use.
"""

from .api_keys import ApiKey, api_name
from .exceptions import DecodeError, EncodeError, FrameTooLarge, ProtocolError, UnsupportedVersion
from .frames import DEFAULT_MAX_FRAME, FrameBuffer
from .header import (Request, RequestHeader, decode_request, decode_response, encode_request,
                     encode_response, encode_response_parts)
from .messages import DATA, REQUESTS, RESPONSES
from .registry import API_TABLE, ApiSpec

__all__ = [
    "API_TABLE", "ApiKey", "ApiSpec", "api_name", "DATA", "DEFAULT_MAX_FRAME", "DecodeError", "EncodeError", "FrameBuffer",
    "FrameTooLarge", "ProtocolError", "REQUESTS", "RESPONSES", "Request", "RequestHeader",
    "UnsupportedVersion", "decode_request", "decode_response", "encode_request", "encode_response",
    "encode_response_parts",
]
