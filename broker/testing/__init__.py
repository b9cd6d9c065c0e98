"""Running a broker inside a test: the embedded broker and the pytest plugin."""
