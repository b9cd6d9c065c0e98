"""SASL as Kafka's brokers speak it: the mechanisms (PLAIN, SCRAM-SHA-256/512, OAUTHBEARER) and
the per-connection exchange around them (SaslHandshake, SaslAuthenticate, re-authentication)."""
