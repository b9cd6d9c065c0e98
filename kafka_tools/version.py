"""The installed groupbroker's version, for ``--version`` and the groups tool's ``--version``."""

from __future__ import annotations


def groupbroker_version() -> str:
    from importlib.metadata import PackageNotFoundError, version    # ~25 ms: only when asked
    try:
        return version("groupbroker")
    except PackageNotFoundError:
        return "unknown"
