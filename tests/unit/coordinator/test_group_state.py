"""The classic group transition table (Kafka's ClassicGroupState.validPreviousStates), pair by pair."""

from itertools import product

import pytest

from coordinator.classic.group import ClassicGroup
from coordinator.classic.state import GroupState as S, IllegalTransition, check_transition

#: (from, to) pairs Kafka allows; every other pair must be refused
LEGAL = {
    (S.PREPARING_REBALANCE, S.EMPTY),
    (S.STABLE, S.PREPARING_REBALANCE),
    (S.COMPLETING_REBALANCE, S.PREPARING_REBALANCE),
    (S.EMPTY, S.PREPARING_REBALANCE),
    (S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE),
    (S.COMPLETING_REBALANCE, S.STABLE),
    *((state, S.DEAD) for state in S),
}
ALL_PAIRS = list(product(S, S))


@pytest.mark.parametrize("current,target", [p for p in ALL_PAIRS if p in LEGAL],
                         ids=lambda s: s.value)
def test_legal_transition(current, target):
    check_transition(current, target)
    group = ClassicGroup("g", state=current)
    group.transition(target, now=1234)
    assert (group.previous_state, group.state, group.current_state_ts) == (current, target, 1234)


@pytest.mark.parametrize("current,target", [p for p in ALL_PAIRS if p not in LEGAL],
                         ids=lambda s: s.value)
def test_illegal_transition(current, target):
    with pytest.raises(IllegalTransition):
        check_transition(current, target)
    group = ClassicGroup("g", state=current, current_state_ts=7)
    with pytest.raises(IllegalTransition):
        group.transition(target, now=1234)
    assert (group.state, group.current_state_ts) == (current, 7)     # nothing changed


def test_table_covers_every_pair():
    assert len([p for p in ALL_PAIRS if p in LEGAL]) == 11
    assert len(ALL_PAIRS) - 11 == 14


def test_wire_names():
    assert [s.value for s in S] == ["Empty", "PreparingRebalance", "CompletingRebalance",
                                    "Stable", "Dead"]
