"""Who may connect and what they may do: listeners and their security protocols, TLS, SASL."""
