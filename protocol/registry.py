"""The API registry: which API keys and versions this codebase speaks, in one place.

Derived from the message declarations, so a version exists here exactly when
both its request and its response can be decoded and encoded. ApiVersions
answers and the broker's dispatch are built from this table.
"""

from __future__ import annotations

from dataclasses import dataclass

from .messages import REQUESTS, RESPONSES


@dataclass(frozen=True, slots=True)
class ApiSpec:
    key: int
    name: str
    min_version: int
    max_version: int
    first_flexible: int | None

    def supports(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version


def _build() -> dict[int, ApiSpec]:
    table = {}
    for key, req in sorted(REQUESTS.items()):
        resp = RESPONSES[key]
        if (req.valid, req.flexible) != (resp.valid, resp.flexible):
            raise AssertionError(f"{req.name} and {resp.name} disagree on versions")
        table[key] = ApiSpec(key, req.name.removesuffix("Request"), req.min_version,
                             req.max_version, req.flexible[0] if req.flexible else None)
    return table


API_TABLE: dict[int, ApiSpec] = _build()


def describe(keys=None) -> str:
    """The table (or its rows for ``keys``) as text, one API a line (for ``groupbroker apis``)."""
    lines = [f"{'key':>4}  {'api':<24} {'versions':<9} first flexible"]
    for spec in API_TABLE.values():
        if keys is not None and spec.key not in keys:
            continue
        flex = "-" if spec.first_flexible is None else f"v{spec.first_flexible}"
        lines.append(f"{spec.key:>4}  {spec.name:<24} {spec.min_version}-{spec.max_version:<7} {flex}")
    return "\n".join(lines)
