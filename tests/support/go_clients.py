"""The Go client drivers of the interop tests (tests/interop/clients/{franz,sarama}/), built
with the machine's Go from modules of the Go module proxy, once per source.

A driver's binary is cached outside the repository, keyed by a hash of its module (go.mod,
go.sum, every .go file) and the Go version: ``~/.cache/groupbroker/go-clients/<name>-<hash>/``.
Go's own module and build caches are kept beside it (``~/.cache/groupbroker/go/mod`` and
``.../go/build``), so a later run neither downloads nor compiles again. ``GOTOOLCHAIN=local``:
Go never fetches another toolchain; a Go older than a module's ``go`` line is reported as
missing (a failure in CI, a skip elsewhere), like a missing ``go``.

Standard library only: ``.ci/setup/go-clients.sh`` runs this file as a script before the
tests (``python3 tests/support/go_clients.py``), which downloads the modules through the proxy
and builds every driver, so the tests find them built.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
CLIENTS = REPO / "tests" / "interop" / "clients"
DRIVERS = ("franz", "sarama")             # directories under CLIENTS, each its own Go module
INSTALL = "Go 1.26 or newer on PATH (the machine's Go; Debian's golang-go is too old)"


class GoMissing(Exception):
    """No usable Go toolchain: the test is skipped, or fails in CI."""


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "groupbroker"


def go_env() -> dict[str, str]:
    root = cache_root() / "go"
    return dict(os.environ, GOMODCACHE=str(root / "mod"), GOCACHE=str(root / "build"),
                GOTOOLCHAIN="local", GOFLAGS="-mod=readonly -buildvcs=false", GO111MODULE="on",
                CGO_ENABLED="0")


def _version(text: str) -> tuple[int, ...]:
    found = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
    return tuple(int(x or 0) for x in found.groups()) if found else ()


def go_tool() -> tuple[str, str]:
    """The ``go`` on PATH (else where the machine image puts it) and its version (``go1.26.8``)."""
    go = shutil.which("go") or shutil.which("go", path="/usr/local/go/bin")
    if go is None:
        raise GoMissing(f"the program 'go' is not on PATH (install: {INSTALL})")
    done = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True, timeout=60,
                          env=go_env())
    if done.returncode != 0:
        raise GoMissing(f"`go env GOVERSION` failed: {done.stderr.strip()}")
    return go, done.stdout.strip()


def module_hash(source: Path, go_version: str) -> str:
    h = hashlib.sha256(go_version.encode())
    for path in sorted(p for p in source.iterdir() if p.suffix == ".go" or p.name in ("go.mod", "go.sum")):
        h.update(f"\0{path.name}\0".encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def driver(name: str, source: Path | None = None) -> Path:
    """The built driver ``name`` (a directory under tests/interop/clients/, or ``source``),
    building it first if this source and Go version have no binary in the cache yet. Raises
    :class:`GoMissing`, or RuntimeError when the build fails."""
    source = source or CLIENTS / name
    go, version = go_tool()
    required = re.search(r"^go (\S+)", (source / "go.mod").read_text(), re.M)
    if required and _version(version) < _version(required[1]):
        raise GoMissing(f"{source / 'go.mod'} needs Go {required[1]}, the go on PATH is {version} "
                        f"(install: {INSTALL})")
    out = cache_root() / "go-clients" / f"{name}-{module_hash(source, version)}"
    binary = out / f"{name}-driver"
    if binary.exists():
        return binary
    out.mkdir(parents=True, exist_ok=True)
    # build beside it and rename: other test sessions may be building the same binary
    fd, partial = tempfile.mkstemp(prefix=f".{name}-", dir=out)
    os.close(fd)
    try:
        done = subprocess.run([go, "build", "-trimpath", "-o", partial, "."], cwd=source,
                              env=go_env(), capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            raise RuntimeError(f"go build of {source} failed ({version}):\n{done.stderr[-4000:]}")
        os.replace(partial, binary)
    finally:
        if os.path.exists(partial):
            os.unlink(partial)
    return binary


def main() -> int:
    for name in DRIVERS:
        try:
            print(f"{name}: {driver(name)}")
        except (GoMissing, RuntimeError) as e:
            print(f"{name}: {e}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
