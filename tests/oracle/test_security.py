"""Authentication and authorization APIs against Apache Kafka 4.3.1, on a plaintext listener
without an authorizer: SaslHandshake and SaslAuthenticate, CreateAcls, DescribeAcls, DeleteAcls,
DescribeUserScramCredentials and AlterUserScramCredentials, at every version we serve. Each
answer is compared field by field."""

import dataclasses
import hashlib
import os

import pytest

from protocol.api_keys import ApiKey
from tests.oracle.steps import req, settled, sub, unique, versions

HS, AUTH = ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE
CA, DA, XA = ApiKey.CREATE_ACLS, ApiKey.DESCRIBE_ACLS, ApiKey.DELETE_ACLS
DS, AS = ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, ApiKey.ALTER_USER_SCRAM_CREDENTIALS
TOPIC, GROUP, ANY = 2, 3, 1
LITERAL, MATCH = 3, 2
READ, ALLOW = 3, 3
SHA256, SHA512 = 1, 2


@pytest.mark.parametrize("version", versions(HS))
async def test_sasl_handshake_on_a_plaintext_listener(oracle, version):
    await oracle.call(HS, version, req(HS, mechanism="PLAIN"), what="PLAIN")
    await oracle.call(HS, version, req(HS, mechanism="NOPE"), what="an unknown mechanism")


@pytest.mark.parametrize("version", versions(AUTH))
async def test_sasl_authenticate_on_a_plaintext_listener(oracle, version):
    await oracle.call(AUTH, version, req(AUTH, auth_bytes=b"\x00user\x00secret"), what="PLAIN bytes")


# --- ACLs without an authorizer -------------------------------------------------------------

def creation(name, **fields):
    return sub(CA, "AclCreation", **{**dict(resource_type=TOPIC, resource_name=name, resource_pattern_type=LITERAL,
                                            principal="User:alice", host="*", operation=READ,
                                            permission_type=ALLOW), **fields})


def acl_filter(api, struct=None, **fields):
    values = dict(resource_type_filter=ANY, resource_name_filter=None, pattern_type_filter=ANY,
                  principal_filter=None, host_filter=None, operation=1, permission_type=1)
    values.update(fields)
    return sub(api, struct, **values) if struct else req(api, **values)


@pytest.mark.parametrize("version", versions(CA))
async def test_acls_without_an_authorizer(oracle, request, version):
    name = unique(request)
    await oracle.call(CA, version, req(CA, creations=(creation(name), creation(name, resource_type=GROUP))),
                      what="create two")
    await oracle.call(CA, version, req(CA, creations=()), what="create none")
    await oracle.call(DA, version, acl_filter(DA), what="describe all")
    await oracle.call(DA, version, acl_filter(DA, resource_type_filter=TOPIC, resource_name_filter=name,
                                              pattern_type_filter=MATCH), what="describe matching")
    await oracle.call(XA, version, req(XA, filters=(acl_filter(XA, "DeleteAclsFilter"),
                                                    acl_filter(XA, "DeleteAclsFilter", resource_type_filter=TOPIC))),
                      what="delete with two filters")
    await oracle.call(XA, version, req(XA, filters=()), what="delete with no filter")


# --- SCRAM users ----------------------------------------------------------------------------

def upsertion(name, mechanism=SHA256, iterations=8192, salt=None):
    salt = os.urandom(16) if salt is None else salt
    digest = "sha256" if mechanism != SHA512 else "sha512"
    salted = hashlib.pbkdf2_hmac(digest, b"secret", salt, max(iterations, 1))
    return sub(AS, "ScramCredentialUpsertion", name=name, mechanism=mechanism, iterations=iterations, salt=salt,
               salted_password=salted)


def deletion(name, mechanism=SHA256):
    return sub(AS, "ScramCredentialDeletion", name=name, mechanism=mechanism)


def described(prefix: str):
    """A DescribeUserScramCredentials answer with this test's users alone (other tests' users
    may exist on either broker)."""
    def only(answer):
        return dataclasses.replace(answer, results=tuple(sorted(
            (r for r in answer.results if r.user.startswith(prefix)), key=lambda r: r.user)))
    return only


@pytest.mark.parametrize("version", versions(AS))
async def test_scram_credentials(oracle, request, version):
    user = unique(request)
    alter = lambda deletions=(), upsertions=(): req(AS, deletions=tuple(deletions), upsertions=tuple(upsertions))  # noqa: E731
    describe = lambda *names: req(DS, users=None if names == (None,) else tuple(  # noqa: E731
        sub(DS, "UserName", name=n) for n in names))
    await oracle.call(DS, version, describe(user), what="an unknown user")
    await oracle.call(AS, version, alter(upsertions=[upsertion(user), upsertion(user, SHA512, 10000)]),
                      what="a user twice in one request")
    await oracle.call(AS, version, alter(upsertions=[upsertion(user)]), what="a user")
    await oracle.call(AS, version, alter(upsertions=[upsertion(user, SHA512, 10000), upsertion(user + "-x")]),
                      what="its second mechanism, and another user")
    # a user's mechanisms come in the order of Kafka's map keyed by the mechanism enum, whose
    # hash is the object's identity: compared as sets
    await settled(oracle, DS, version, describe(user), what="the user", unordered=("credential_infos",))
    await oracle.call(DS, version, describe(user, user), what="the user twice")
    await oracle.call(DS, version, describe(user, user + "-unknown", user + "-x"), what="three users, one unknown",
                      unordered=("credential_infos",))
    await oracle.call(DS, version, describe(""), what="an empty user name")
    await settled(oracle, DS, version, describe(None), what="every user", prepare=described(user),
                  unordered=("credential_infos",))
    await oracle.call(AS, version, alter(upsertions=[upsertion(user + "-a", mechanism=0)]), what="an unknown mechanism")
    await oracle.call(AS, version, alter(upsertions=[upsertion(user + "-b", iterations=100)]), what="too few iterations")
    await oracle.call(AS, version, alter(upsertions=[upsertion(user + "-c", iterations=20000)]),
                      what="too many iterations")
    await oracle.call(AS, version, alter(upsertions=[upsertion("")]), what="an empty user name")
    await oracle.call(AS, version, alter(upsertions=[upsertion(user + "-d", salt=b"")]), what="an empty salt")
    await oracle.call(AS, version, alter(deletions=[deletion(user + "-unknown")]), what="delete an unknown user")
    await oracle.call(AS, version, alter(deletions=[deletion(user, mechanism=0)]), what="delete an unknown mechanism")
    await oracle.call(AS, version, alter(deletions=[deletion(user)], upsertions=[upsertion(user)]),
                      what="delete and upsert one user")
    await oracle.call(AS, version, alter(deletions=[deletion(user), deletion(user, SHA512)]),
                      what="one user's two mechanisms")
    await oracle.call(AS, version, alter(deletions=[deletion(user + "-x"), deletion(user, SHA512)]),
                      what="two users")
    await settled(oracle, DS, version, describe(user), what="deleted")
