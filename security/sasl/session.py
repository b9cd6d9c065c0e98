"""One SASL connection's authentication, as Kafka's SaslServerAuthenticator runs it: only
ApiVersions and SaslHandshake before the handshake, then the mechanism's tokens (in
SaslAuthenticate requests after a v1 handshake, raw frames after v0), then the session, which
expires after ``connections.max.reauth.ms`` (or the OAUTHBEARER token's expiry) unless the
client authenticates again (KIP-368). Sans-IO: the server feeds it requests and carries out
the :class:`Step` it returns; times are wall-clock milliseconds passed in."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Callable

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode as E
from protocol.messages import RESPONSES

from security.sasl.errors import AuthenticationFailed, generic_message

SaslHandshakeResponse = RESPONSES[ApiKey.SASL_HANDSHAKE].cls
SaslAuthenticateResponse = RESPONSES[ApiKey.SASL_AUTHENTICATE].cls
#: Kafka refuses a second re-authentication started within a second of the last one
MIN_REAUTH_INTERVAL_MS = 1000


class State(enum.Enum):
    HANDSHAKE_OR_VERSIONS = "HANDSHAKE_OR_VERSIONS_REQUEST"
    HANDSHAKE = "HANDSHAKE_REQUEST"
    AUTHENTICATE = "AUTHENTICATE"
    COMPLETE = "COMPLETE"
    FAILED = "FAILED"


@dataclass(frozen=True)
class Step:
    """What the server does with one request of the exchange: send ``response`` (a response
    body; raw bytes after a v0 handshake; None: nothing), and then close the connection if
    ``close`` gives a reason; ``delayed``: only after connection.failed.authentication.delay.ms
    (Kafka holds back the answer to a failed authentication that long)."""
    response: object = None
    close: str | None = None
    delayed: bool = False
    user: str | None = None


class SaslSession:
    def __init__(self, mechanisms: dict[str, Callable[[], object]], reauth_ms: Callable[[str], int]):
        self.mechanisms = mechanisms             # enabled mechanism -> a new server for it
        self.reauth_ms = reauth_ms               # mechanism -> connections.max.reauth.ms (0: off)
        self.state = State.HANDSHAKE_OR_VERSIONS
        self.raw = False                         # tokens without Kafka headers (a v0 handshake)
        self.principal: str | None = None        # User:name once authenticated
        self.mechanism: str | None = None
        self.expires_ms: float | None = None     # the session's end; None: never
        self._server = None
        self._reauthenticating = False
        self._switched_to: str | None = None    # another mechanism asked for to re-authenticate
        self._reauth_started_ms = -MIN_REAUTH_INTERVAL_MS

    @property
    def authenticated(self) -> bool:
        return self.principal is not None and not self._reauthenticating and self.state is State.COMPLETE

    # --- before (or between) authentications -------------------------------------------------
    def api_versions(self, supported: bool) -> Step | None:
        """An ApiVersions before authentication: answered normally (None) once; a second one
        closes the connection at once, unanswered. One Kafka cannot read (``supported`` False)
        leaves the state as it was, so the client may ask again at a lower version."""
        if self.state is State.HANDSHAKE_OR_VERSIONS:
            if supported:
                self.state = State.HANDSHAKE
            return None
        return Step(close=f"Unexpected ApiVersions request received during SASL authentication state "
                          f"{self.state.value}")

    def unexpected(self, api_key: int, error_response) -> Step:
        """Any other request before authentication: unanswered during the handshake; during
        the exchange (v1), answered ILLEGAL_SASL_STATE; then the connection closes."""
        exchanging = self.state is State.AUTHENTICATE and not self.raw
        self.state = State.FAILED
        name = ApiKey(api_key).name if api_key in ApiKey._value2member_map_ else str(api_key)
        if not exchanging:
            return Step(close=f"Unexpected Kafka request of type {name} during SASL handshake.", delayed=True)
        message = f"Unexpected Kafka request of type {name} during SASL authentication."
        return Step(error_response(E.ILLEGAL_SASL_STATE, message), close=message, delayed=True)

    def begins_reauthentication(self, now_ms: float) -> bool:
        """A SaslHandshake on an authenticated connection starts over (KIP-368) only if its
        session expires and it did not start over within the last second; else KafkaApis
        answers it ILLEGAL_SASL_STATE."""
        if self.expires_ms is None or now_ms - self._reauth_started_ms < MIN_REAUTH_INTERVAL_MS:
            return False
        self._reauthenticating, self._reauth_started_ms = True, now_ms
        self.state = State.HANDSHAKE
        return True

    def expired(self, now_ms: float) -> bool:
        return self.expires_ms is not None and now_ms >= self.expires_ms and not self._reauthenticating

    def handshake(self, version: int, mechanism: str) -> Step:
        enabled = list(self.mechanisms)
        if self.state not in (State.HANDSHAKE_OR_VERSIONS, State.HANDSHAKE):
            return self.unexpected(ApiKey.SASL_HANDSHAKE, lambda code, message: SaslHandshakeResponse(
                error_code=code, mechanisms=()))
        if mechanism not in self.mechanisms:
            self.state = State.FAILED
            return Step(SaslHandshakeResponse(error_code=E.UNSUPPORTED_SASL_MECHANISM, mechanisms=tuple(enabled)),
                        close=f"Unsupported SASL mechanism {mechanism}", delayed=True)
        if self._reauthenticating and mechanism != self.mechanism:
            self._switched_to = mechanism         # Kafka accepts the handshake, fails the first token
        else:
            self.mechanism, self._server = mechanism, self.mechanisms[mechanism]()
        self.state, self.raw = State.AUTHENTICATE, version == 0
        return Step(SaslHandshakeResponse(error_code=E.NONE, mechanisms=tuple(enabled)))

    # --- the exchange ------------------------------------------------------------------------
    def authenticate(self, version: int, token: bytes, now_ms: float) -> Step:
        """One token (a SaslAuthenticate's auth_bytes, or a raw frame after a v0 handshake)."""
        if self.state is not State.AUTHENTICATE:
            return self.unexpected(ApiKey.SASL_AUTHENTICATE, self._authenticate_error)
        if self._switched_to is not None:
            self.state = State.FAILED
            return Step(close=f"SASL mechanism '{self._switched_to}' requested by client is not supported for "
                              f"re-authentication of mechanism '{self.mechanism}'", delayed=True)
        server = self._server
        try:
            challenge = server.evaluate(token)
        except AuthenticationFailed as e:
            return self._failed(version, e)
        if not server.complete:
            return Step(self._answer(version, challenge, 0))
        principal = f"User:{server.user}"
        if self._reauthenticating and principal != self.principal:
            old, new = self.principal.split(":", 1), principal.split(":", 1)
            return self._failed(version, AuthenticationFailed(
                "the principal changed", user=server.user,
                client_message=f"Cannot change principals during re-authentication from {old[0]}.{old[1]}: "
                               f"{new[0]}.{new[1]}"))
        lifetime = self._lifetime(server, now_ms)
        self.principal = principal
        self.expires_ms = None if lifetime is None else now_ms + lifetime
        self.state, self._reauthenticating = State.COMPLETE, False
        return Step(self._answer(version, challenge, lifetime or 0), user=server.user)

    def refuse(self, version: int, reason: str) -> Step:
        """Turn the authentication that just succeeded into a failure (fault injection): the
        client is told its credentials were wrong."""
        user = self.principal.split(":", 1)[1]
        self.principal = None
        return self._failed(version, AuthenticationFailed(reason, user=user))

    def _lifetime(self, server, now_ms: float) -> int | None:
        """Kafka's session lifetime: the least of connections.max.reauth.ms (if set) and the
        time left on the credential (an OAUTHBEARER token's exp); None: the session never ends."""
        limits = []
        reauth = self.reauth_ms(self.mechanism)
        if reauth > 0:
            limits.append(reauth)
        credential_end = getattr(server, "lifetime_end_ms", None)
        if credential_end is not None:
            limits.append(max(0, int(credential_end - now_ms)))
        return min(limits) if limits else None

    def _answer(self, version: int, challenge: bytes, lifetime: int):
        if self.raw:
            return challenge
        return SaslAuthenticateResponse(error_code=E.NONE, error_message=None, auth_bytes=challenge,
                                        session_lifetime_ms=lifetime)

    def _failed(self, version: int, failure: AuthenticationFailed) -> Step:
        self.state = State.FAILED
        message = failure.client_message or generic_message(self.mechanism, self._reauthenticating)
        reason = f"authentication failed for {failure.user!r} with {self.mechanism}: {failure}" \
            if failure.user is not None else f"authentication failed with {self.mechanism}: {failure}"
        if self.raw:           # v0: no error answer; Kafka closes at once unless PLAIN said why
            return Step(close=reason, delayed=failure.client_message is not None, user=failure.user)
        return Step(self._authenticate_error(E.SASL_AUTHENTICATION_FAILED, message), close=reason,
                    delayed=True, user=failure.user)

    @staticmethod
    def _authenticate_error(code: int, message: str):
        return SaslAuthenticateResponse(error_code=code, error_message=message, auth_bytes=b"",
                                        session_lifetime_ms=0)
