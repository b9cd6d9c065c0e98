"""Differential tests: groupbroker and Apache Kafka answer the same requests (tests/support/differential.py)."""

import pytest

from tests.support.differential import Differential


@pytest.fixture
async def oracle(kafka_oracle, oracle_twin):
    """A connection to each broker; ``await oracle.call(api_key, version, body)`` compares."""
    pair = await Differential.open(oracle_twin.port, kafka_oracle.port)
    yield pair
    await pair.aclose()
