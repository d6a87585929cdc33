"""Fixtures for the integration tier that start a server of their own.

The `rabbitmq` fixture is registered here, once, rather than imported by each AMQP test
module: a session fixture imported into several modules is a separate fixture in each, and
would start one RabbitMQ node per module.
"""

from tests.support.rabbitmq import rabbitmq_node

__all__ = ["rabbitmq_node"]
