"""The test suite: unit/ per package, integration/ against a real broker, interop/ with real
clients, pipeline/ for the analytics; support/ holds what they share. Imports are absolute
(``from tests.support.wire import ...``)."""
