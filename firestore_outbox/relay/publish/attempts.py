"""One delivery attempt under a lease: its deadline, the circuit breaker, and a publisher
that raises turned into a result whose error is masked like every other: a retry for a bug,
the channel's fault (no attempt spent) for a `ConfigError` (its settings refused while it
publishes, say a client it makes again)."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Protocol

from firestore_outbox.errors import ConfigError
from firestore_outbox.observability.logs import log_event
from firestore_outbox.observability.metrics import AttemptMetrics
from firestore_outbox.observability.tracing import PublishSpans, messaging_system, record_outcome
from firestore_outbox.publishers.base import (
    Delivery,
    Outcome,
    Publisher,
    PublishResult,
    bounded_error,
    error_class,
)
from firestore_outbox.relay.config import SETTLE_ALLOWANCE_SECONDS, RelayConfig
from firestore_outbox.relay.events import rfc3339

if TYPE_CHECKING:
    from firestore_outbox.relay.lease import Lease
    from firestore_outbox.relay.publish.breaker import Breaker

logger = logging.getLogger("firestore_outbox.relay.core")


class Settling(Protocol):
    """Whether settles are landing (`relay.settle.settler.Settler` says)."""

    def wait_flowing(self, timeout: float) -> bool: ...


class Run(Protocol):
    """What an attempt needs of its run (`relay.pipeline.Pipeline` has it): the run's
    monotonic deadline, the channel's breaker and the settler (whether settles land)."""

    @property
    def deadline(self) -> float: ...

    @property
    def breaker(self) -> Breaker: ...

    @property
    def settler(self) -> Settling: ...


class Attempts:
    """Publishes leased events through `publisher` as CloudEvents from `source`."""

    def __init__(self, publisher: Publisher, source: str, config: RelayConfig) -> None:
        self._publisher = publisher
        self._source = source
        self._config = config
        system = messaging_system(config.publisher.name)
        destination = config.publisher.destination()
        self._spans = PublishSpans(system, destination)
        self._metrics = AttemptMetrics(
            {"messaging.system": system, "messaging.destination.name": destination}
        )
        # A publisher's exception text goes to `lastError`: masked like every other error.
        self._secrets = [
            *config.known_secrets,
            *config.signing_secrets,
            *config.publisher.secrets(),
        ]

    def publish(self, lease: Lease, run: Run) -> PublishResult | None:
        """Publish under a lease that will outlive the publish; None (handed back unsent)
        when there is no time left or the channel is broken."""
        now = time.monotonic()
        # The attempt must be over before the run's budget (less the settle) and before
        # its lease expires (less the settle), whichever comes first.
        lease_expiry = lease.leased_at + self._config.lock_timeout_seconds
        if lease.expires is not None:
            lease_expiry = lease.expires()
        deadline = min(run.deadline, lease_expiry) - SETTLE_ALLOWANCE_SECONDS
        if deadline - now < self._config.attempt_seconds - SETTLE_ALLOWANCE_SECONDS:
            return None
        # Settles not landing (a settle write failed): wait while this attempt still fits;
        # what could not be settled is kept unsent, not delivered to be delivered again.
        latest_start = deadline - (self._config.attempt_seconds - SETTLE_ALLOWANCE_SECONDS)
        if not run.settler.wait_flowing(latest_start - now):
            return None
        if run.breaker.open:
            return None
        event = lease.event
        created = {"traceparent": event.traceparent, "tracestate": event.tracestate}
        with self._spans.span(event.event_id, created, lease.attempt) as (span, carried):
            delivery = Delivery(
                event_id=event.event_id,
                event_type=event.event_type,
                source=self._source,
                subject=event.aggregate_id,
                time=rfc3339(event.created_at),
                body=event.body,
                attempt=lease.attempt,
                deadline=deadline,
                traceparent=carried.get("traceparent"),
                tracestate=carried.get("tracestate"),
            )
            started = time.monotonic()
            result = self._publish(delivery)
            seconds = time.monotonic() - started
            delivered = result.outcome is Outcome.DELIVERED
            error_type = None if delivered else error_class(result)
            record_outcome(span, result.outcome.value, error_type)
        lag = time.time() - event.created_at.timestamp() if delivered else None
        self._metrics.record(result.outcome.value, error_type, seconds, lag)
        run.breaker.record(result)
        return result

    def close(self) -> None:
        """Close the publisher, if it has anything to close (`close` is optional)."""
        close = getattr(self._publisher, "close", None)
        if close is not None:
            close()

    def _publish(self, delivery: Delivery) -> PublishResult:
        event_id = delivery.event_id
        try:
            result = self._publisher.publish(delivery)
            if not isinstance(result, PublishResult):  # a bug that does not raise
                raise TypeError(
                    f"the publisher answered {type(result).__name__}, not a PublishResult"
                )
            return result
        except ConfigError as exc:  # the configuration's fault, not the event's: none spent
            error = bounded_error(str(exc), self._secrets)
            log_event(
                logger,
                logging.ERROR,
                "relay.publisher_not_configured",
                f"the publisher refused its settings on event {event_id}: {error}",
                eventId=event_id,
                error=error,
            )
            return PublishResult(Outcome.CHANNEL, error)
        except Exception as exc:  # a publisher bug must not strand the event in PROCESSING
            error = bounded_error(f"{type(exc).__name__}: {exc}", self._secrets)
            return retry_for_bug(
                "relay.publisher_raised",
                f"publisher raised on event {event_id}",
                exc,
                event_id=event_id,
                attempt=delivery.attempt,
                error=error,
            )


def retry_for_bug(
    event: str, message: str, exc: Exception, *, event_id: str, attempt: int, error: str
) -> PublishResult:
    """A retry for an attempt that a bug ended (`exc`, logged as `event` at ERROR with its
    traceback), `error` its `lastError`: the event must not be stranded unsettled."""
    log_event(
        logger,
        logging.ERROR,
        event,
        message,
        exc_info=True,
        eventId=event_id,
        attempt=attempt,
        errorClass=type(exc).__name__,
    )
    return PublishResult(Outcome.RETRY, error)
