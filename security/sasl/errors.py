"""How a SASL exchange fails."""

from __future__ import annotations


class AuthenticationFailed(Exception):
    """The client did not prove who it is. ``client_message`` is what Kafka tells the client
    (None: Kafka's generic text, which does not reveal whether the user exists); the exception's
    own text is the reason, for the broker's log."""

    def __init__(self, reason: str, client_message: str | None = None, user: str | None = None):
        super().__init__(reason)
        self.client_message = client_message
        self.user = user


def generic_message(mechanism: str, reauthenticating: bool = False) -> str:
    """Kafka's answer to a failure whose details it keeps from the client."""
    what = "re-authentication" if reauthenticating else "authentication"
    return f"Authentication failed during {what} due to invalid credentials with SASL mechanism {mechanism}"
