"""DescribeUserScramCredentials and AlterUserScramCredentials, with Kafka's validation (its
controller's ScramControlManager and the broker's ScramImage): a user altered twice in one
request is DUPLICATE_RESOURCE, iterations outside 4096..16384 UNACCEPTABLE_CREDENTIAL,
deleting or describing an unknown credential RESOURCE_NOT_FOUND."""

from __future__ import annotations

from coordinator.java_order import grown_capacity, iteration_order, string_hash
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode as E
from protocol.messages import RESPONSES

from security.credentials import CredentialStore, credential_from_salted

DescribeResponse = RESPONSES[ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS].cls
AlterResponse = RESPONSES[ApiKey.ALTER_USER_SCRAM_CREDENTIALS].cls
#: Kafka's ScramMechanism type codes
MECHANISM_TYPES = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
TYPE_OF = {name: code for code, name in MECHANISM_TYPES.items()}
MAX_ITERATIONS, MIN_ITERATIONS = 16384, 4096


def describe(store: CredentialStore, request):
    users = store.users()
    asked = [u.name for u in request.users] if request.users else sorted(users)
    results = []
    distinct = list(dict.fromkeys(asked))         # ScramImage.describe: a HashMap of the users
    for name in iteration_order(distinct, string_hash, grown_capacity(len(distinct))):
        result = DescribeResponse.DescribeUserScramCredentialsResult
        if asked.count(name) > 1:
            results.append(result(user=name, error_code=E.DUPLICATE_RESOURCE, credential_infos=(),
                                  error_message=f"Cannot describe SCRAM credentials for the same user twice in a "
                                                f"single request: {name}"))
        elif name not in users:
            results.append(result(user=name, error_code=E.RESOURCE_NOT_FOUND, credential_infos=(),
                                  error_message=f"Attempt to describe a user credential that does not exist: {name}"))
        else:
            results.append(result(user=name, error_code=E.NONE, credential_infos=tuple(
                result.CredentialInfo(mechanism=TYPE_OF[m], iterations=c.iterations)
                for m, c in sorted(users[name].items()))))
    return DescribeResponse(error_code=E.NONE, results=tuple(results))


def alter(store: CredentialStore, request):
    """Validate every change as Kafka does, then store the valid ones in one write."""
    known = store.users()
    errors: dict[str, tuple[int, str]] = {}
    deletions: dict[str, object] = {}
    upserts: dict[str, object] = {}
    for deletion in request.deletions:
        name = deletion.name
        if name in errors:
            continue
        if deletions.pop(name, None) is not None:
            errors[name] = (E.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request")
        elif (problem := _check_name(name, deletion.mechanism)) is not None:
            errors[name] = problem
        elif MECHANISM_TYPES[deletion.mechanism] not in known.get(name, {}):
            errors[name] = (E.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist")
        else:
            deletions[name] = deletion
    for upsertion in request.upsertions:
        name = upsertion.name
        if name in errors:
            continue
        if deletions.pop(name, None) is not None or upserts.pop(name, None) is not None:
            errors[name] = (E.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request")
        elif (problem := _check_name(name, upsertion.mechanism)) is not None:
            errors[name] = problem
        elif upsertion.iterations < MIN_ITERATIONS:
            errors[name] = (E.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
        elif upsertion.iterations > MAX_ITERATIONS:
            errors[name] = (E.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
        else:
            upserts[name] = upsertion
    store.change(
        upserts=[(u.name, MECHANISM_TYPES[u.mechanism],
                  credential_from_salted(MECHANISM_TYPES[u.mechanism], u.salted_password, u.salt, u.iterations))
                 for u in upserts.values()],
        deletions=[(d.name, MECHANISM_TYPES[d.mechanism]) for d in deletions.values()])
    result = AlterResponse.AlterUserScramCredentialsResult
    # ScramControlManager.alterCredentials answers from its HashMaps: deletions, upserts, errors
    return AlterResponse(results=tuple(
        [result(user=name, error_code=E.NONE, error_message=None)
         for name in [*_hash_order(deletions), *_hash_order(upserts)]]
        + [result(user=name, error_code=errors[name][0], error_message=errors[name][1]) for name in _hash_order(errors)]))


def _hash_order(users: dict) -> list[str]:
    return iteration_order(list(users), string_hash, grown_capacity(len(users)))


def _check_name(name: str, mechanism: int) -> tuple[int, str] | None:
    if not name:
        return E.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if mechanism not in MECHANISM_TYPES:
        return E.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    return None
