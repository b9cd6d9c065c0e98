"""Virtualenvs beside the project's own, for clients that cannot share it (their pins conflict
with the project's): built once in the repo, kept between runs, git-ignored by their own
``.gitignore``, and rebuilt when the wanted requirements change."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.processes import in_ci

MARKER = "requirements.installed"


def side_python(venv: Path, requirements: list[str], check: str) -> str:
    """The python of ``venv`` holding ``requirements`` (pip specifiers); ``check`` is Python
    code that must run there without error once they are installed. In CI (CI=true) a failed
    build fails the test; elsewhere (say, offline) it skips."""
    python = venv / "bin" / "python"
    marker = venv / MARKER
    wanted = "\n".join(requirements) + "\n"
    if python.exists() and marker.exists() and marker.read_text() == wanted:
        return str(python)
    try:
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True,
                       capture_output=True, text=True, timeout=180)
        (venv / ".gitignore").write_text("*\n")
        subprocess.run([str(python), "-m", "pip", "install", "--disable-pip-version-check",
                        "--no-input", "-q", *requirements], check=True,
                       capture_output=True, text=True, timeout=600)
        subprocess.run([str(python), "-c", check], check=True, capture_output=True, text=True,
                       timeout=120)
    except (subprocess.SubprocessError, OSError) as e:
        detail = getattr(e, "stderr", None) or ""
        reason = f"cannot build a virtualenv in {venv} with {requirements}: {e} {detail[-2000:]}"
        if in_ci():
            pytest.fail(reason)
        pytest.skip(reason)
    marker.write_text(wanted)
    return str(python)
