"""Fault injection: the rules, the control operations, and the admin endpoint that serves them."""
