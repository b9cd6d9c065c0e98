"""What groupbroker knows about one API, declared once, next to the code that answers it.

Every table the broker needs (the APIs served, ApiVersions, which part answers each request,
which may be pipelined, how ACLs are checked, how a failed request is answered, which may get an
injected error) is derived from these declarations by ``broker/dispatch/served.py``. Adding an
API means writing its handler and one :class:`ApiSpec` beside it.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

from protocol.api_keys import ApiKey
from protocol.registry import API_TABLE


class Runs(enum.Enum):
    """The part of the broker that answers an API (the handler's ``self``)."""
    CONNECTION = "the connection's own APIs"
    DATA_PLANE = "the data plane"
    GROUP_COORDINATOR = "the group coordinator's shards"
    TRANSACTION_COORDINATOR = "the transaction coordinator"


def never(version: int) -> bool:
    return False


def always(version: int) -> bool:
    return True


@dataclass(frozen=True)
class ApiSpec:
    key: ApiKey
    runs: Runs
    #: the attribute of the part ``runs`` names that answers it (dots reach into its parts)
    handler: str
    #: (version, request, error, message) -> the answer when the whole request fails with error
    failed: Callable
    #: (authorization, ctx, request, route) -> the answer, checked against the ACLs before the
    #: handler runs; None: Kafka checks nothing for it
    authorize: Callable | None = None
    #: the versions whose requests a connection may have in flight several at once (they never
    #: wait for other clients)
    pipelined: Callable[[int], bool] = never
    #: whether fault injection may answer it with an error code
    injectable: bool = False
    #: the first version ApiVersions advertises, where it is below the first one served
    advertised_min: int | None = None
    #: the feature whose finalized level must be at least 1 for it to be served; below that it
    #: is answered UNSUPPORTED_VERSION before anything is checked (Kafka's share.version)
    feature: str | None = None

    @property
    def versions(self) -> range:
        """The versions served (those the protocol registry knows)."""
        entry = API_TABLE[self.key]
        return range(entry.min_version, entry.max_version + 1)

    @property
    def advertised(self) -> tuple[int, int]:
        """The (min, max) versions ApiVersions advertises."""
        served = self.versions
        return (served.start if self.advertised_min is None else self.advertised_min), served.stop - 1

    @property
    def answers_refusals(self) -> bool:
        """Whether a handler's refusal (or bug) is turned into :attr:`failed`'s answer: the data
        plane and the transaction coordinator raise them; the group coordinator answers its own
        errors and the connection's APIs never fail."""
        return self.runs in (Runs.DATA_PLANE, Runs.TRANSACTION_COORDINATOR)
