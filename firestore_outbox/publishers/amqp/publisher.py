"""`AmqpPublisher`: each event as one persistent AMQP 0-9-1 message, confirmed by the broker
(RabbitMQ, ApsaraMQ for RabbitMQ, or any 0-9-1 broker with publisher confirms).

The message: body = the JSON payload; `content_type` application/json; `delivery_mode` 2
(persistent); `message_id` = event id (the consumer's dedup key); `type` = event type;
`timestamp` = the event's creation second; headers = the CloudEvents attributes as the AMQP
binding of CloudEvents names them (`cloudEvents_id`, `cloudEvents_type`, ...: the `_`
separator, which JMS consumers also understand), plus the Standard Webhooks headers when
signing. Routed by `routing_key`, or by the event type when none is configured.

Wire rules. Published with `mandatory` on a confirm channel and answered by the broker:
ack: DELIVERED. Returned unroutable (no queue bound for that routing key): REJECTED, the broker
is healthy and said where this event cannot go; the next attempt would get the same answer
until someone binds a queue, after which `outbox requeue` sends it again (a CHANNEL result
would hand it back due at once, to be refused again for the whole run). Nack or no confirm by
the attempt's deadline: RETRY. Refused, unreachable, login refused, connection or channel
closed (404 no such exchange, 403 access refused, a restarting broker): CHANNEL. A message
the broker refuses as too large (406): REJECTED.
"""

from __future__ import annotations

import datetime
import logging
import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pika
from pika.spec import BasicProperties

from firestore_outbox.masking import masker
from firestore_outbox.publishers.amqp.link import LinkClosed, LinkTimeout
from firestore_outbox.publishers.amqp.pool import LinkPool
from firestore_outbox.publishers.base import (
    Delivery,
    Outcome,
    PublisherOptions,
    PublishResult,
    bounded_error,
    check_options,
    cloudevent_attributes,
)
from firestore_outbox.publishers.http.urls import url_secrets

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from firestore_outbox.publishers.amqp.settings import AmqpSettings

# AMQP 0-9-1 short strings (message id, type, routing key) are at most 255 bytes.
MAX_SHORT_STRING = 255
_TOO_LARGE = 406  # PRECONDITION_FAILED: RabbitMQ's answer to a message over max_message_size


@dataclass(frozen=True)
class AmqpTarget:
    """Where to publish: the broker URL (it holds the password), exchange and routing key."""

    url: str = field(repr=False)  # amqp://user:password@host:5672/vhost or amqps://
    exchange: str = ""  # "" is the default exchange: the routing key names the queue
    routing_key: str | None = None  # None: each event's type


class AmqpPublisher:
    """Publishes each event on a pooled connection (`firestore_outbox.publishers.amqp.pool`: at most
    `pool_size` open, default 16, each used by one thread at a time); every attempt ends by
    its deadline, at most `connect_timeout + read_timeout` after it starts."""

    def __init__(self, target: AmqpTarget, **options: Unpack[PublisherOptions]) -> None:
        check_options(options)
        self._target = target
        self._bound = options["connect_timeout"] + options["read_timeout"]
        self._signer = options.get("signer")
        self._mask = masker([*url_secrets(target.url), *options.get("secrets", ())])
        self._pool = LinkPool(target.url, options["connect_timeout"], options.get("pool_size", 16))
        pika_logger = logging.getLogger("pika")
        if pika_logger.level == logging.NOTSET:  # its INFO is a line per connection and channel
            pika_logger.setLevel(logging.WARNING)

    def publish(self, delivery: Delivery) -> PublishResult:
        deadline = min(delivery.deadline or math.inf, time.monotonic() + self._bound)
        routing_key = self._target.routing_key or delivery.event_type
        too_long = _too_long(event_id=delivery.event_id, type=delivery.event_type)
        too_long = too_long or _too_long(routing_key=routing_key)
        if too_long:
            return self._failure(Outcome.REJECTED, f"AMQP: {too_long}")
        properties = self._properties(delivery)
        link = None
        try:
            link = self._pool.take(deadline)
            confirm = link.publish(
                self._target.exchange, routing_key, delivery.body, properties, deadline
            )
        except LinkTimeout as exc:
            self._pool.drop(link, deadline)
            return self._failure(Outcome.RETRY, f"timeout: AMQP: {exc}")
        except LinkClosed as exc:
            self._pool.drop(link, deadline)
            outcome = Outcome.REJECTED if exc.reply_code == _TOO_LARGE else Outcome.CHANNEL
            return self._failure(outcome, f"ConnectionError: AMQP: {exc}")
        except BaseException:
            self._pool.drop(link, deadline)  # a bug or an interrupt: the link's state is unknown
            raise
        self._pool.give(link)
        if not confirm.acked:
            return self._failure(Outcome.RETRY, "AMQP: the broker nacked the message")
        if confirm.returned is not None:
            where = f"exchange {self._target.exchange!r}, routing key {routing_key!r}"
            error = f"AMQP: unroutable ({where}): {confirm.returned}"
            return self._failure(Outcome.REJECTED, error)
        return PublishResult.delivered()

    def close(self) -> None:
        """Close the pooled connections; one in use is closed when its publish is over."""
        self._pool.close()

    def _properties(self, delivery: Delivery) -> BasicProperties:
        attributes = cloudevent_attributes(delivery)
        headers: dict[str, str] = {
            f"cloudEvents_{name}": value
            for name, value in attributes.items()
            if name != "datacontenttype"  # the binding carries it as `content_type`
        }
        if self._signer is not None:
            headers.update(self._signer.sign(attributes, delivery.body).headers())
        return BasicProperties(
            content_type=attributes["datacontenttype"],
            delivery_mode=pika.DeliveryMode.Persistent,
            message_id=delivery.event_id,
            type=delivery.event_type,
            timestamp=_seconds(delivery.time),
            headers=headers,
        )

    def _failure(self, outcome: Outcome, error: str) -> PublishResult:
        return PublishResult(outcome, bounded_error(error, self._mask))


def _too_long(**values: str) -> str | None:
    for name, value in values.items():
        if len(value.encode("utf-8", "surrogatepass")) > MAX_SHORT_STRING:
            return f"the {name.replace('_', ' ')} is over {MAX_SHORT_STRING} bytes"
    return None


def _seconds(rfc3339: str) -> int | None:
    """Unix seconds of an RFC 3339 time (AMQP's `timestamp` property), None if unparsable."""
    try:
        moment = datetime.datetime.fromisoformat(rfc3339.replace("Z", "+00:00"))
    except ValueError:
        return None
    return int(moment.timestamp())


def from_settings(settings: AmqpSettings, options: PublisherOptions) -> AmqpPublisher:
    """`RELAY_PUBLISHER=amqp`: the `RELAY_AMQP_*` broker and route
    (`firestore_outbox.publishers.registry`)."""
    target = AmqpTarget(
        url=settings.url, exchange=settings.exchange, routing_key=settings.routing_key
    )
    return AmqpPublisher(target, **options)
