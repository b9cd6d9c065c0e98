"""SCRAM credentials, stored as Kafka stores them: per user and mechanism a salt, an iteration
count and the two keys derived from the password (stored key, server key), never the password.

They live in ``<data-dir>/security/scram-credentials.json``. Every change rewrites the file
whole (a temporary file, fsynced, renamed over it, the folder fsynced), under an advisory lock,
so ``groupbroker users`` and a running broker (its AlterUserScramCredentials) can change it
at the same time and a crash leaves either the old file or the new one. The broker reads the
file again whenever it has changed, so users added while it runs can log in at once.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
from dataclasses import dataclass

from security.files import FOLDER, locked, write_atomically

#: mechanism -> (hash name, Kafka's minimum and maximum iterations)
MECHANISMS = {"SCRAM-SHA-256": ("sha256", 4096, 16384), "SCRAM-SHA-512": ("sha512", 4096, 16384)}
DEFAULT_ITERATIONS = 4096
FILE = "scram-credentials.json"


class CredentialError(ValueError):
    """A credential that cannot be stored (unknown mechanism, iterations out of range)."""


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def to_json(self) -> dict:
        return {"salt": _b64(self.salt), "stored_key": _b64(self.stored_key),
                "server_key": _b64(self.server_key), "iterations": self.iterations}

    @classmethod
    def from_json(cls, fields: dict) -> ScramCredential:
        return cls(base64.b64decode(fields["salt"]), base64.b64decode(fields["stored_key"]),
                   base64.b64decode(fields["server_key"]), int(fields["iterations"]))


def check_iterations(mechanism: str, iterations: int) -> None:
    if mechanism not in MECHANISMS:
        raise CredentialError(f"unknown SCRAM mechanism {mechanism!r} (SCRAM-SHA-256 or SCRAM-SHA-512)")
    _, low, high = MECHANISMS[mechanism]
    if iterations < low:
        raise CredentialError(f"Too few iterations: {iterations} (the minimum for {mechanism} is {low})")
    if iterations > high:
        raise CredentialError(f"Too many iterations: {iterations} (the maximum for {mechanism} is {high})")


def salted_password(mechanism: str, password: bytes, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(MECHANISMS[mechanism][0], password, salt, iterations)


def credential_from_salted(mechanism: str, salted: bytes, salt: bytes, iterations: int) -> ScramCredential:
    """What AlterUserScramCredentials carries (a salted password) -> the keys to store."""
    digest = MECHANISMS[mechanism][0]
    client_key = hmac.digest(salted, b"Client Key", digest)
    return ScramCredential(salt, hashlib.new(digest, client_key).digest(),
                           hmac.digest(salted, b"Server Key", digest), iterations)


def new_credential(mechanism: str, password: str, iterations: int = DEFAULT_ITERATIONS) -> ScramCredential:
    check_iterations(mechanism, iterations)
    salt = secrets.token_bytes(32)
    return credential_from_salted(mechanism, salted_password(mechanism, password.encode(), salt, iterations),
                                  salt, iterations)


class CredentialStore:
    """The SCRAM credentials of one data dir (``data_dir`` None: none, nothing stored)."""

    def __init__(self, data_dir: str | None):
        self.path = os.path.join(data_dir, FOLDER, FILE) if data_dir else None
        self._seen: tuple | None = None           # the file's identity when last read
        self._users: dict[str, dict[str, ScramCredential]] = {}

    def users(self) -> dict[str, dict[str, ScramCredential]]:
        """User -> mechanism -> credential, as the file holds them now."""
        if self.path is None:
            return {}
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self._seen, self._users = None, {}
            return self._users
        identity = (st.st_ino, st.st_mtime_ns, st.st_size)
        if identity != self._seen:
            with open(self.path, encoding="utf-8") as f:
                self._users = _parse(json.load(f))
            self._seen = identity
        return self._users

    def credential(self, user: str, mechanism: str) -> ScramCredential | None:
        return self.users().get(user, {}).get(mechanism)

    def change(self, upserts=(), deletions=()) -> None:
        """Apply ``upserts`` ((user, mechanism, credential) each) and ``deletions`` ((user,
        mechanism) each) in one crash-safe rewrite."""
        if self.path is None:
            raise CredentialError("no data dir to store credentials in")
        folder = os.path.dirname(self.path)
        os.makedirs(folder, exist_ok=True)
        with locked(folder):
            self._seen = None
            users = {u: dict(m) for u, m in self.users().items()}
            for user, mechanism in deletions:
                users.get(user, {}).pop(mechanism, None)
                if not users.get(user, True):
                    del users[user]
            for user, mechanism, credential in upserts:
                users.setdefault(user, {})[mechanism] = credential
            write_atomically(self.path, {"users": {u: {m: c.to_json() for m, c in sorted(ms.items())}
                                                    for u, ms in sorted(users.items())}})
            self._seen = None



def _parse(document: dict) -> dict[str, dict[str, ScramCredential]]:
    return {user: {m: ScramCredential.from_json(c) for m, c in mechanisms.items()}
            for user, mechanisms in document.get("users", {}).items()}


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")
