"""What the Go interop tests share: their drivers as pytest sees them (built once per source,
tests/support/go_clients.py), and a driver process whose JSON-line events are read as they
come (tests/interop/clients/franz/main.go prints them)."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
from pathlib import Path

from tests.support.go_clients import GoMissing, driver
from tests.support.processes import missing


def go_driver(name: str) -> str:
    """The built driver, or the test is skipped (fails in CI) if Go is missing or too old."""
    try:
        return str(driver(name))
    except GoMissing as e:
        missing(str(e))


class EventProcess:
    """A driver process; each JSON line on its stdout is an event (a dict with ``ev``), its
    stderr goes to ``log_path``."""

    def __init__(self, name: str, cmd: list[str], log_path: Path):
        self.name, self.log_path = name, Path(log_path)
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self._log,
                                     stdin=subprocess.DEVNULL)
        self._events: list[dict] = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            with self._lock:
                self._events.append(event)

    def events(self, kind: str | None = None) -> list[dict]:
        with self._lock:
            return [e for e in self._events if kind is None or e["ev"] == kind]

    def leave(self, timeout: float = 20.0) -> int:
        """SIGTERM (the member leaves its group); its exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout)
        self._reader.join(5)
        return code

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        self._reader.join(5)

    def close(self) -> None:
        try:
            self.leave(5)
        except subprocess.TimeoutExpired:
            self.kill()
        self._log.close()

    def log_tail(self) -> str:
        return f"--- {self.name}:\n" + self.log_path.read_text(errors="replace")[-2500:]


def run_driver(cmd: list[str], timeout: float = 60.0) -> list[dict]:
    """Run a driver command to its end (it must exit 0); its events."""
    done = subprocess.run(cmd, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, (f"{' '.join(cmd)} exited {done.returncode}:\n"
                                  f"{done.stderr.decode(errors='replace')[-3000:]}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith(b"{")]
