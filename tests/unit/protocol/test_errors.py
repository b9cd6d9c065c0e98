"""protocol.errors.ErrorCode against kafka-python's error classes and the codes the group APIs use."""

from __future__ import annotations

import inspect
import re

import kafka.errors
import pytest

from protocol.errors import ErrorCode

#: Codes where kafka-python's class name differs from Kafka's ``Errors`` name, even normalised.
KNOWN_NAME_DIFFERENCES = {
    -1: "UnknownError",                          # Kafka: UNKNOWN_SERVER_ERROR
    0: "NoError",                                # Kafka: NONE
    2: "CorruptRecordError",                     # Kafka: CORRUPT_MESSAGE (also CorruptRecordException)
    4: "InvalidFetchRequestError",               # Kafka: INVALID_FETCH_SIZE
    6: "NotLeaderForPartitionError",             # Kafka: NOT_LEADER_OR_FOLLOWER (renamed by KIP-392)
    10: "MessageSizeTooLargeError",              # Kafka: MESSAGE_TOO_LARGE
    17: "InvalidTopicError",                     # Kafka: INVALID_TOPIC_EXCEPTION
    39: "InvalidReplicationAssignmentError",     # Kafka: INVALID_REPLICA_ASSIGNMENT
    40: "InvalidConfigurationError",             # Kafka: INVALID_CONFIG
}


def _kafka_python_classes() -> dict[int, list[type]]:
    by_code: dict[int, list[type]] = {}
    for _, cls in inspect.getmembers(kafka.errors, inspect.isclass):
        errno = getattr(cls, "errno", None)
        if isinstance(errno, int):
            by_code.setdefault(errno, []).append(cls)
    return by_code


KP = _kafka_python_classes()


def _normalised(class_name: str) -> set[str]:
    """``NotCoordinatorError`` -> {"NOT_COORDINATOR_ERROR", "NOT_COORDINATOR"}."""
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", class_name).upper()
    return {snake, re.sub(r"_(ERROR|EXCEPTION)$", "", snake)}


def test_kafka_python_has_codes():
    assert len(KP) > 100


@pytest.mark.parametrize("errno", sorted(KP))
def test_every_kafka_python_errno_is_ours(errno):
    code = ErrorCode(errno)                       # ValueError if we lack the code
    names = [cls.__name__ for cls in KP[errno]]
    matched = any(code.name in _normalised(n) for n in names)
    if errno in KNOWN_NAME_DIFFERENCES:
        assert KNOWN_NAME_DIFFERENCES[errno] in names
        assert not matched, f"{errno} now matches; drop it from KNOWN_NAME_DIFFERENCES"
    else:
        assert matched, f"{errno}: ours {code.name}, kafka-python {names}"


def test_known_differences_are_still_kafka_python_codes():
    assert set(KNOWN_NAME_DIFFERENCES) <= set(KP)


@pytest.mark.parametrize("code, number", [
    (ErrorCode.UNKNOWN_SERVER_ERROR, -1),
    (ErrorCode.NONE, 0),
    (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, 14),
    (ErrorCode.COORDINATOR_NOT_AVAILABLE, 15),
    (ErrorCode.NOT_COORDINATOR, 16),
    (ErrorCode.ILLEGAL_GENERATION, 22),
    (ErrorCode.INCONSISTENT_GROUP_PROTOCOL, 23),
    (ErrorCode.INVALID_GROUP_ID, 24),
    (ErrorCode.UNKNOWN_MEMBER_ID, 25),
    (ErrorCode.INVALID_SESSION_TIMEOUT, 26),
    (ErrorCode.REBALANCE_IN_PROGRESS, 27),
    (ErrorCode.UNSUPPORTED_VERSION, 35),
    (ErrorCode.INVALID_REQUEST, 42),
    (ErrorCode.NON_EMPTY_GROUP, 68),
    (ErrorCode.GROUP_ID_NOT_FOUND, 69),
    (ErrorCode.MEMBER_ID_REQUIRED, 79),
    (ErrorCode.GROUP_MAX_SIZE_REACHED, 81),
    (ErrorCode.FENCED_INSTANCE_ID, 82),
])
def test_group_codes(code, number):
    assert code == number
    assert ErrorCode(number) is code


def test_codes_are_contiguous_int16():
    values = sorted(e.value for e in ErrorCode)
    assert values == list(range(-1, values[-1] + 1))
    assert values[-1] >= 133 and values[-1] < 2 ** 15


@pytest.mark.parametrize("code, retriable", [
    (ErrorCode.NONE, False),
    (ErrorCode.UNKNOWN_SERVER_ERROR, False),
    (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, True),
    (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, True),
    (ErrorCode.COORDINATOR_NOT_AVAILABLE, True),
    (ErrorCode.NOT_COORDINATOR, True),
    (ErrorCode.ILLEGAL_GENERATION, False),
    (ErrorCode.REBALANCE_IN_PROGRESS, False),
    (ErrorCode.UNSTABLE_OFFSET_COMMIT, True),
    (ErrorCode.UNKNOWN_TOPIC_ID, True),
    (ErrorCode.FENCED_INSTANCE_ID, False),
])
def test_retriable(code, retriable):
    assert code.retriable is retriable


def test_retriable_agrees_with_kafka_python_where_it_knows():
    # kafka-python marks CORRUPT_MESSAGE non-retriable; Kafka's CorruptRecordException is retriable.
    differ = {2}
    for errno, classes in KP.items():
        if errno in differ:
            continue
        for cls in classes:
            assert bool(getattr(cls, "retriable", False)) is ErrorCode(errno).retriable, cls.__name__


def test_lookup_maps_unknown_codes_to_unknown_server_error():
    assert ErrorCode.lookup(16) is ErrorCode.NOT_COORDINATOR
    assert ErrorCode.lookup(9999) is ErrorCode.UNKNOWN_SERVER_ERROR
