"""The group event journal for analytics: its segment files and the broker's recorder."""
