"""The transaction coordinator (Kafka's TransactionCoordinator) as pure logic: transactional
ids, their producer ids and epochs, the transaction state machine and its timeouts."""
