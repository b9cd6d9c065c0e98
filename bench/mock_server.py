"""librdkafka's mock cluster in a process of its own (for bench/performance.py), so that its
start-up and its CPU can be measured as any other broker's.

Prints ``mock listening on HOST:PORT ready-in SECONDS`` (the time to create the cluster in a
running Python process, as a test would) and then reads commands from standard input, one per
line: ``topic NAME PARTITIONS`` (created through the mock's C API, since AdminClient hangs
there; answers ``ok``), ``delay MS`` (the initial rebalance delay of classic groups; ``ok``).
It exits when its standard input closes. Only 127.0.0.1 is used.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from e2e import MockCluster  # noqa: E402


def main() -> int:
    started = time.perf_counter()
    mock = MockCluster(initial_delay_ms=None)
    print(f"mock listening on {mock.bootstrap} ready-in {time.perf_counter() - started:.4f}", flush=True)
    for line in sys.stdin:
        words = line.split()
        if words[:1] == ["topic"]:
            mock.create_topic(words[1], int(words[2]))
        elif words[:1] == ["delay"]:
            mock._set_initial_delay(int(words[1]))
        else:
            print(f"unknown command {line.strip()!r}", flush=True)
            continue
        print("ok", flush=True)
    mock.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
