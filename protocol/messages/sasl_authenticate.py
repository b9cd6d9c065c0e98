"""SaslAuthenticate (API key 36): carry one round of SASL authentication bytes."""

from ..schema import F, Message

REQUEST = Message("SaslAuthenticateRequest", 36, "request", "0-2", "2+", [
    F("auth_bytes", "bytes"),
])

RESPONSE = Message("SaslAuthenticateResponse", 36, "response", "0-2", "2+", [
    F("error_code", "int16"),
    F("error_message", "string", nullable="0+"),
    F("auth_bytes", "bytes"),
    F("session_lifetime_ms", "int64", "1+", default=0, ignorable=True),
])
