"""``python -m broker`` runs the same command line as ``groupbroker``."""

import sys

from broker.cli import main

sys.exit(main())
