"""SASL/SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), the server side as Kafka's
ScramSaslServer: two rounds (client-first -> server-first, client-final -> server-final), no
channel binding, the client's proof checked against the stored key. An unknown user and a
wrong password fail alike, so the client cannot tell whether a user exists."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import secrets

from security.credentials import MECHANISMS, CredentialStore
from security.sasl.errors import AuthenticationFailed

_CLIENT_FIRST = re.compile(r"n,(a=(?P<authzid>[^,]*))?,(?P<bare>n=(?P<name>[^,]*),r=(?P<nonce>[^,]+)(?P<extensions>(,.*)?))")
_CLIENT_FINAL = re.compile(r"(?P<without_proof>c=(?P<binding>[^,]*),r=(?P<nonce>[^,]+)(,.*?)?),p=(?P<proof>[^,]+)")


class ScramServer:
    def __init__(self, mechanism: str, credentials: CredentialStore):
        self.mechanism, self.credentials = mechanism, credentials
        self.digest = MECHANISMS[mechanism][0]
        self.user: str | None = None
        self.complete = False
        self._step = self._client_first

    def evaluate(self, token: bytes) -> bytes:
        return self._step(token.decode("utf-8", errors="replace"))

    def _client_first(self, message: str) -> bytes:
        match = _CLIENT_FIRST.fullmatch(message)
        if match is None:
            raise AuthenticationFailed(f"invalid SCRAM client-first message {message[:64]!r}")
        user = _unescape(match["name"])
        extensions = _extensions(match["extensions"])
        if extensions.get("tokenauth", "false").lower() == "true":
            raise AuthenticationFailed("delegation tokens are not served", user=user)
        if match["authzid"] and _unescape(match["authzid"]) != user:
            raise AuthenticationFailed(
                "Authentication failed: Client requested an authorization id that is different from username",
                client_message="Authentication failed: Client requested an authorization id that is "
                               "different from username", user=user)
        credential = self.credentials.credential(user, self.mechanism)
        if credential is None:
            raise AuthenticationFailed(f"no {self.mechanism} credential for user {user!r}", user=user)
        self.user, self._credential = user, credential
        self._nonce = match["nonce"] + secrets.token_urlsafe(24)
        self._server_first = (f"r={self._nonce},s={base64.b64encode(credential.salt).decode()},"
                              f"i={credential.iterations}")
        self._client_first_bare = match["bare"]
        self._step = self._client_final
        return self._server_first.encode()

    def _client_final(self, message: str) -> bytes:
        match = _CLIENT_FINAL.fullmatch(message)
        if match is None:
            raise AuthenticationFailed(f"invalid SCRAM client-final message {message[:64]!r}", user=self.user)
        # Kafka checks only that the nonce ends with ours: librdkafka before 2.1 sends its own
        # nonce again in front of it
        if not match["nonce"].endswith(self._nonce):
            raise AuthenticationFailed("Invalid client nonce in the final client message.", user=self.user)
        try:
            proof = base64.b64decode(match["proof"], validate=True)
        except binascii.Error:
            raise AuthenticationFailed("invalid client proof (not base64)", user=self.user) from None
        auth_message = f"{self._client_first_bare},{self._server_first},{match['without_proof']}".encode()
        credential = self._credential
        signature = hmac.digest(credential.stored_key, auth_message, self.digest)
        if len(proof) != len(signature):
            raise AuthenticationFailed("Invalid client credentials", user=self.user)
        client_key = bytes(a ^ b for a, b in zip(proof, signature))
        if not hmac.compare_digest(hashlib.new(self.digest, client_key).digest(), credential.stored_key):
            raise AuthenticationFailed("Invalid client credentials (wrong password)", user=self.user)
        self.complete = True
        server_signature = hmac.digest(credential.server_key, auth_message, self.digest)
        return b"v=" + base64.b64encode(server_signature)


def _unescape(name: str) -> str:
    return name.replace("=2C", ",").replace("=3D", "=")


def _extensions(text: str) -> dict[str, str]:
    pairs = (item.partition("=") for item in text.split(",") if item)
    return {key: value for key, _, value in pairs}
