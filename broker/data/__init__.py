"""The data plane: produce, fetch, offsets by time, topic and config admin; storage in topics/."""
