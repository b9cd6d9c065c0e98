"""The requests a groupbroker subprocess answered, as its fault-injection endpoint records them
(the broker must run with ``groupbroker.admin.port``): what a real client sent, on the wire."""

from __future__ import annotations

import contextlib
import re

from broker.cli.faults import AdminClient, read_token


def _admin(broker) -> AdminClient:
    address = re.search(r"admin endpoint listening on (\S+)", broker.log_text()).group(1)
    return AdminClient(address, read_token(str(broker.data_dir / "admin.token")))


@contextlib.contextmanager
def recording(broker):
    """Record while the block runs; the list it yields is filled with the recorded requests
    (dicts: api, version, client_id...) when the block ends."""
    admin = _admin(broker)
    recorded: list[dict] = []
    try:
        admin.faults.recorded(clear=True)
        admin.faults.record(on=True)
        yield recorded
        admin.faults.record(on=False)
        recorded.extend(admin.faults.recorded(clear=True))
    finally:
        admin.close()


def versions_used(recorded: list[dict], client_ids=None) -> dict[str, set[int]]:
    """API name -> the versions used (by ``client_ids`` only, if named)."""
    used: dict[str, set[int]] = {}
    for r in recorded:
        if client_ids is None or r["client_id"] in client_ids:
            used.setdefault(r["api"], set()).add(r["version"])
    return used
