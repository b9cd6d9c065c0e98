"""The transaction coordinator at run time: its logs, its markers, its timers and its APIs."""
