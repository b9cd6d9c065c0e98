"""Burrow-style lag evaluation of one partition, as plain Python (the job runs it as a UDF).

The input is a window of the group's last accepted commits of the partition (oldest first),
each with the lag it left (the partition's log end when the commit was decided, minus the
committed offset; None when the log end was unknown), the partition's current lag, and the
time of the evaluation. docs/analytics.md states the rules; they are checked in this order:

1. OK    the current lag is 0: the group has consumed everything.
2. ERR   the partition's log end is unknown (no sample of it): the lag cannot be judged.
3. STOP  the time since the last commit is longer than the window spans (first to last
         commit): the group stopped committing while records wait.
4. ERR   an offset in the window is lower than the one before it: offsets were rewound.
5. OK    a commit in the window left no lag: the group kept up during the window.
6. STALL at least two commits, all of the same offset: committing without progressing.
7. WARN  at least two commits and the lag never went down from one commit to the next.
8. OK    otherwise: the lag is coming down.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

STATUSES = ("OK", "WARN", "STALL", "STOP", "ERR")
DEFAULT_WINDOW = 10


class Commit(NamedTuple):
    t: int                 # ms
    offset: int
    lag: int | None


def evaluate(window: Sequence[Commit], now: int, current_lag: int | None) -> tuple[str, str]:
    """(status, the rule that decided it) for a partition; ``window`` oldest first, not empty."""
    first, last = window[0], window[-1]
    if current_lag == 0:
        return "OK", "caught up: no lag"
    if current_lag is None:
        return "ERR", "the partition's log end is unknown"
    if now - last.t > last.t - first.t:
        return "STOP", (f"no commit for {now - last.t} ms, longer than the window's "
                        f"{last.t - first.t} ms, with lag {current_lag}")
    if any(b.offset < a.offset for a, b in zip(window, window[1:])):
        return "ERR", "offsets went backwards in the window (rewound)"
    lags = [c.lag for c in window if c.lag is not None]
    if 0 in lags:
        return "OK", "kept up within the window (a commit left no lag)"
    if len(window) >= 2 and len({c.offset for c in window}) == 1:
        return "STALL", f"{len(window)} commits of offset {last.offset}, lag {current_lag}"
    if len(lags) >= 2 and all(b >= a for a, b in zip(lags, lags[1:])):
        return "WARN", f"lag never went down over {len(window)} commits ({lags[0]} -> {lags[-1]})"
    return "OK", "lag is coming down"


def worst(statuses: Sequence[str]) -> str:
    """The most severe of several statuses (a group's status is its worst partition's)."""
    return max(statuses, key=STATUSES.index, default="OK")
