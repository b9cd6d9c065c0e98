"""Where a SASL listener's connection meets its :class:`SaslSession`: which requests the
session decides (everything before authentication, re-authentication, an expired session) and
which are served as usual."""

from __future__ import annotations

from protocol.api_keys import ApiKey

from security.sasl.session import SaslSession, State, Step

from broker.dispatch.served import whole_request_error


def gate(session: SaslSession, frame: bytes, decode, unknown_api_versions, now_ms: float):
    """(header, body, step) of one request: ``step`` None means "serve it as usual". After a
    v0 handshake a frame is a bare token (no header, no body)."""
    if session.raw and session.state is State.AUTHENTICATE:
        return None, None, session.authenticate(0, frame, now_ms)
    header, body = decode(frame)
    key, version = header.api_key, header.api_version
    if session.authenticated:
        if key == ApiKey.SASL_HANDSHAKE and session.begins_reauthentication(now_ms):
            return header, body, session.handshake(version, body.mechanism)
        if key != ApiKey.SASL_HANDSHAKE and session.expired(now_ms):
            # Kafka checks only when a request comes, and drops it unanswered
            return header, body, Step(close=f"its session expired (connections.max.reauth.ms) and "
                                            f"{ApiKey(key).name} is not a re-authentication")
        return header, body, None
    if key == ApiKey.API_VERSIONS:
        return header, body, session.api_versions(body is not unknown_api_versions)
    if key == ApiKey.SASL_HANDSHAKE:
        return header, body, session.handshake(version, body.mechanism)
    if key == ApiKey.SASL_AUTHENTICATE and not session.raw:
        return header, body, session.authenticate(version, body.auth_bytes, now_ms)
    return header, body, session.unexpected(
        key, lambda code, message: whole_request_error(key, version, body, code, message))
