"""Shared test setup: tests import their helper modules (harness, wire client) from this folder."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
