"""Which code answers each API: one table keyed by ApiKey, and ApiVersions built from it."""
