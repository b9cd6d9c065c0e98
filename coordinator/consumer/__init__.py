"""KIP-848 consumer groups: members heartbeat, the server assigns, members reconcile."""
