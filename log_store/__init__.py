"""What every log of groupbroker stands on: the file system (the real one, and an in-memory one
that fails and crashes on purpose for tests), the one switch that fails a disk, segment files
and their crash-safe swap, and crash-safe whole-file writes."""
