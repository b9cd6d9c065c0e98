"""The ``groupbroker`` command line."""
