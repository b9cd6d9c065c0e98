"""SASL/PLAIN (RFC 4616): one message, ``authzid NUL username NUL password``, checked against the
users of the listener's JAAS config (``user_<name>="<password>"``), as Kafka's PlainSaslServer."""

from __future__ import annotations

import hmac

from security.sasl.errors import AuthenticationFailed


class PlainServer:
    mechanism = "PLAIN"

    def __init__(self, users: dict[str, str]):
        self.users = users
        self.user: str | None = None          # once authenticated
        self.complete = False

    def evaluate(self, token: bytes) -> bytes:
        parts = token.decode("utf-8", errors="replace").split("\0")
        if len(parts) != 3:
            raise self._refused(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}")
        authzid, username, password = parts
        if not username:
            raise self._refused("Authentication failed: username not specified")
        if not password:
            raise self._refused("Authentication failed: password not specified", username)
        expected = self.users.get(username)
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            raise self._refused("Authentication failed: Invalid username or password", username,
                                "unknown user" if expected is None else "wrong password")
        if authzid and authzid != username:
            raise self._refused("Authentication failed: Client requested an authorization id that is "
                                "different from username", username)
        self.user, self.complete = username, True
        return b""

    @staticmethod
    def _refused(message: str, user: str | None = None, reason: str | None = None) -> AuthenticationFailed:
        return AuthenticationFailed(reason or message, client_message=message, user=user)
