"""The trio server: listeners, the connection loop, and the broker that wires the parts."""
