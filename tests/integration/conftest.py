"""Fixtures for the integration tier that start a server of their own.

The `rabbitmq` and `kafka` fixtures are registered here, once, rather than imported by each
broker's test module: a session fixture imported into several modules is a separate fixture in
each, and would start one RabbitMQ node (or Kafka broker) per module.
"""

from tests.support.kafka import kafka_broker
from tests.support.rabbitmq import rabbitmq_node

__all__ = ["kafka_broker", "rabbitmq_node"]
