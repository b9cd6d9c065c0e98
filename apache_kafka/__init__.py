"""Apache Kafka itself, pinned and run from its Maven artefacts: the oracle the test suite
compares groupbroker with, and the backend a user's tests can switch to
(``pytest --groupbroker-backend=kafka``). ``artefacts`` fetches the jars (standard library only,
so CI's setup runs it before any virtualenv exists); ``process`` runs the broker."""
