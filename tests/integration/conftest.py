"""Fixtures for the integration tier that start a server of their own.

The `rabbitmq`, `kafka` and `pausable_emulator` fixtures are registered here, once, rather
than imported by each test module: a session fixture imported into several modules is a
separate fixture in each, and would start one RabbitMQ node (or Kafka broker, or emulator)
per module.
"""

from tests.support.kafka import kafka_broker
from tests.support.pausable import pausable_emulator, pausable_emulator_process
from tests.support.rabbitmq import rabbitmq_node

__all__ = ["kafka_broker", "pausable_emulator", "pausable_emulator_process", "rabbitmq_node"]
