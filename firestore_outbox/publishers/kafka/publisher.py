"""`KafkaPublisher`: each event as one Kafka message on the configured topic (Apache Kafka,
ApsaraMQ for Kafka, or any broker of the Kafka protocol), with confluent-kafka (the `kafka`
extra).

The message: key = the aggregate id (the event's `subject`), so Kafka keeps each aggregate's
events in one partition, in the order they are sent; value = the JSON payload; headers = the
CloudEvents attributes as the CloudEvents Kafka protocol binding names them (`ce_id`,
`ce_type`, `ce_source`, `ce_subject`, `ce_time`, `ce_specversion`, and `content-type`), UTF-8,
plus the Standard Webhooks headers (`webhook-id`, ...) when signing, so a consumer verifies
exactly as for HTTP.

Each publish waits for its own delivery report, one thread at a time polling the shared producer
(`firestore_outbox.publishers.kafka.producer`) until the attempt's deadline: DELIVERED only
when the broker acknowledged the message (`acks=all`). The relay sends an aggregate's next
event only once this one is settled, so a record that fails for good can never let the next
record of its key through, idempotent producer or not. Errors map as
`firestore_outbox.publishers.kafka.outcomes` says; a report that has not come by the deadline
is a retry later, or the channel's fault when the producer's last word was a connection-level
error (credentials refused, no broker reachable).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from confluent_kafka import KafkaError, KafkaException

from firestore_outbox.errors import ConfigError
from firestore_outbox.masking import masker
from firestore_outbox.publishers.base import (
    Delivery,
    Outcome,
    PublisherOptions,
    PublishResult,
    bounded_error,
    check_options,
    cloudevent_attributes,
)
from firestore_outbox.publishers.kafka.outcomes import describe, outcome_of
from firestore_outbox.publishers.kafka.producer import ProducerSession, client_config, refused

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from firestore_outbox.publishers.kafka.settings import KafkaSettings

# The CloudEvents Kafka binding: `ce_` + the attribute, but `datacontenttype` is `content-type`.
_HEADER = {"datacontenttype": "content-type"}
# How long one poll may sleep (the poller notices a fatal error within it), and how long a
# thread that is not the poller waits for its report before it tries to become the poller.
_POLL_SECONDS = 0.05
_TURN_SECONDS = 0.005
# How long `close()` may deliver what the producer still holds.
CLOSE_SECONDS = 1.0


class _Report:
    """One message's delivery report, set from whichever thread served it."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.error: KafkaError | None = None
        self.sent = time.monotonic()

    def __call__(self, error: KafkaError | None, _message: Any) -> None:
        self.error = error
        self.done.set()


class KafkaPublisher:
    """Publishes each event to `settings.topic`; see the module docstring. Every attempt ends
    by its deadline, at most `connect_timeout + read_timeout` after it starts. The producer is
    made when the publisher is: a setting librdkafka refuses raises `ConfigError`."""

    def __init__(self, settings: KafkaSettings, **options: Unpack[PublisherOptions]) -> None:
        check_options(options)
        self._topic = settings.topic
        self._bound = options["connect_timeout"] + options["read_timeout"]
        self._signer = options.get("signer")
        secrets: Iterable[str] = options.get("secrets", ())
        self._mask = masker([*settings.secrets(), *secrets])
        # One thread polls at a time and serves every thread's report: a report served by
        # another thread's poll wakes its own thread at once, not when its poll times out.
        self._poller = threading.Lock()
        self.session = ProducerSession(
            client_config(settings, options["connect_timeout"], self._bound)
        )
        try:  # made now: a setting librdkafka refuses is the configuration's error, no event's
            self.session.producer()
        except KafkaException as exc:
            raise ConfigError(self._mask(str(refused(exc.args[0])))) from None

    def publish(self, delivery: Delivery) -> PublishResult:
        deadline = min(delivery.deadline or math.inf, time.monotonic() + self._bound)
        try:
            producer = self.session.producer()
        except KafkaException as exc:  # made again after a fatal error, and refused this time
            return self._failure(Outcome.CHANNEL, str(refused(exc.args[0])))
        report = _Report()
        try:
            producer.produce(
                self._topic,
                value=delivery.body,
                key=delivery.subject.encode("utf-8", "surrogatepass"),
                headers=self._headers(delivery),
                on_delivery=report,
            )
        except BufferError:  # the producer's queue is full: it is behind, not broken
            return self._failure(Outcome.RETRY, "Kafka: the producer's queue is full")
        except KafkaException as exc:
            return self._raised(producer, exc.args[0], report.sent)
        while not report.done.is_set():
            left = deadline - time.monotonic()
            if left <= 0 or self.session.fatal(producer):
                return self._unreported(producer, report.sent)
            if not self._poller.acquire(blocking=False):
                report.done.wait(min(left, _TURN_SECONDS))  # the poller serves it
                continue
            try:
                producer.poll(min(left, _POLL_SECONDS))
            except KafkaException as exc:  # a fatal error, raised out of the poll
                return self._raised(producer, exc.args[0], report.sent)
            finally:
                self._poller.release()
        if report.error is not None:
            return self._answered(report.error, report.sent)
        self.session.acknowledged()
        return PublishResult.delivered()

    def close(self) -> None:
        """Deliver what the producer still holds (at most `CLOSE_SECONDS`) and let it go."""
        self.session.close(CLOSE_SECONDS)

    def _raised(self, producer: Any, error: KafkaError, sent: float) -> PublishResult:
        if error.fatal() or error.code() == KafkaError._FATAL:
            self.session.failed(producer, error)
            return self._failure(Outcome.RETRY, f"{describe(error)}; sent again later")
        return self._answered(error, sent)

    def _answered(self, error: KafkaError, sent: float) -> PublishResult:
        """A delivery report's error (or `produce()`'s): a timeout while the producer said the
        connection failed (a refused login, no broker) since the message was sent is the
        channel's fault."""
        outcome = outcome_of(error.code())
        link = self.session.link_error(sent)
        if outcome is Outcome.RETRY and link is not None:
            return self._failure(Outcome.CHANNEL, link)
        return self._failure(outcome, describe(error))

    def _unreported(self, producer: Any, sent: float) -> PublishResult:
        """No delivery report by the deadline, or the producer failed under the message."""
        if self.session.fatal(producer):
            return self._failure(Outcome.RETRY, "Kafka: the producer failed; sent again later")
        link = self.session.link_error(sent)
        if link is not None:
            return self._failure(Outcome.CHANNEL, link)
        self.session.stalled(producer, sent)
        return self._failure(Outcome.RETRY, "timeout: Kafka: no delivery report by the deadline")

    def _headers(self, delivery: Delivery) -> list[tuple[str, bytes]]:
        attributes = cloudevent_attributes(delivery)
        headers = {_HEADER.get(name, f"ce_{name}"): value for name, value in attributes.items()}
        if self._signer is not None:
            headers.update(self._signer.sign(attributes, delivery.body).headers())
        return [(name, value.encode("utf-8", "surrogatepass")) for name, value in headers.items()]

    def _failure(self, outcome: Outcome, error: str) -> PublishResult:
        return PublishResult(outcome, bounded_error(error, self._mask))


def from_settings(settings: KafkaSettings, options: PublisherOptions) -> KafkaPublisher:
    """`RELAY_PUBLISHER=kafka`: the `RELAY_KAFKA_*` brokers and topic
    (`firestore_outbox.publishers.registry`)."""
    return KafkaPublisher(settings, **options)
