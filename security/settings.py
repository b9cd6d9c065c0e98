"""One listener's view of the security settings: Kafka lets ``listener.name.<name>.<setting>``
override ``<setting>`` for that listener alone (listener names lower-cased in the prefix)."""

from __future__ import annotations

from security.listeners import Listener


class SettingsError(ValueError):
    """A security setting Kafka would refuse at startup, or one this broker cannot serve."""


class ListenerSettings:
    def __init__(self, props: dict[str, str], listener: Listener):
        self.props, self.listener = props, listener
        self.prefix = f"listener.name.{listener.name.lower()}."

    def get(self, name: str, default: str | None = None) -> str | None:
        value = self.props.get(self.prefix + name)
        return self.props.get(name, default) if value is None else value

    def listener_only(self, name: str) -> str | None:
        """A setting Kafka reads only with the listener prefix (a broker's JAAS configs)."""
        return self.props.get(self.prefix + name)
