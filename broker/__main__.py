"""``python -m broker`` runs the same command line as ``groupbroker``."""

import sys

from .cli import main

sys.exit(main())
