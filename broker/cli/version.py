"""The installed groupbroker's version, for ``--version`` and the groups tool's ``--version``."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version


def groupbroker_version() -> str:
    try:
        return version("groupbroker")
    except PackageNotFoundError:
        return "unknown"
