"""Settings by Kafka's names, their values spelled as a properties file spells them."""

from __future__ import annotations


def kafka_props(settings: dict) -> dict[str, str]:
    """``True`` is ``true``, ``500`` is ``500``: for Kafka's ``server.properties``, for
    ``groupbroker serve -o`` and for the embedded broker alike."""
    return {key: str(value).lower() if isinstance(value, bool) else str(value)
            for key, value in settings.items()}
