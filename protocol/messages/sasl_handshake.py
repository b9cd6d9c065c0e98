"""SaslHandshake (API key 17): choose a SASL mechanism before authenticating."""

from ..schema import F, Message

REQUEST = Message("SaslHandshakeRequest", 17, "request", "0-1", "none", [
    F("mechanism", "string"),
])

RESPONSE = Message("SaslHandshakeResponse", 17, "response", "0-1", "none", [
    F("error_code", "int16"),
    F("mechanisms", "[]string"),
])
