"""`RocketMqPublisher`: deliver events to an Apache RocketMQ 5.x / ApsaraMQ for RocketMQ topic
through its gRPC proxy, with `rocketmq-python-client` (the `rocketmq` extra).

Each event is one message on the configured topic: the body is the JSON payload; `keys` is the
event id (the broker's and the console's lookup key, and the consumer's dedup key); the
CloudEvents attributes are message properties as the CloudEvents RocketMQ binding names them
(`CE_id`, `CE_type`, `CE_source`, `CE_subject`, `CE_time`, `CE_specversion`, `CE_contenttype`),
plus the Standard Webhooks signature (`webhookid`, ...) when signing. On a FIFO topic
(`fifo=True`) the message group is the aggregate id, so the broker keeps each aggregate's
events in the order the relay sends them; the order they are sent in is the relay core's.

The producer starts on the first publish (it reads the topic's route then) and each send is
bounded by the delivery's deadline: the client's own retries (3 attempts) happen inside that
bound, and a send still going when it passes is a retry later (at least once, as always).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterable
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from firestore_outbox.publishers.base import (
    Delivery,
    Outcome,
    PublisherOptions,
    PublishResult,
    bounded_error,
    cloudevent_attributes,
)
from firestore_outbox.publishers.rocketmq.client import rocketmq_client
from firestore_outbox.signing import Signer

# The client, imported with this module (only when RELAY_PUBLISHER=rocketmq chose it) and away
# from the user's home; a missing client is an ImportError here, a ConfigError for the caller.
_client = rocketmq_client()

# The CloudEvents RocketMQ binding's property names: `CE_` + the attribute, but
# `datacontenttype` travels as `CE_contenttype`.
_PROPERTY = {"datacontenttype": "CE_contenttype"}


@dataclass(frozen=True, kw_only=True)
class RocketMqTarget:
    """Where to send: the proxy's `host:port` endpoints, the topic, whether it is FIFO, and
    the instance's credentials (user name and password on ApsaraMQ; none for open brokers)."""

    endpoints: str
    topic: str
    fifo: bool = False
    tls: bool = False
    namespace: str = ""
    access_key: str = ""
    secret_key: str = field(default="", repr=False)


class RocketMqPublisher:
    """Sends each event as one message to `target.topic`; see the module docstring."""

    def __init__(
        self,
        target: RocketMqTarget,
        *,
        timeout: float,
        signer: Signer | None = None,
        secrets: Iterable[str] = (),
    ) -> None:
        self._target = target
        self._timeout = timeout
        self._signer = signer
        self._secrets = [target.secret_key, *secrets]
        self._lock = threading.Lock()
        self._producer: Any = None

    def publish(self, delivery: Delivery) -> PublishResult:
        try:
            producer = self._started()
        except Exception as exc:  # no route, no proxy, refused credentials: the channel's
            return self._failure(Outcome.CHANNEL, exc)
        message = _client.Message()
        message.topic = self._target.topic
        message.body = delivery.body
        message.keys = delivery.event_id
        if self._target.fifo:
            message.message_group = delivery.subject
        for name, value in self._properties(delivery).items():
            message.add_property(name, value)
        wait = self._timeout
        if delivery.deadline is not None:
            wait = min(wait, max(0.0, delivery.deadline - time.monotonic()))
        try:
            producer.send_async(message).result(timeout=wait)
        except FutureTimeout:
            return PublishResult(Outcome.RETRY, "timeout: deadline: the broker did not confirm")
        except Exception as exc:
            return self._failure(outcome_of(exc), exc)
        return PublishResult.delivered()

    def close(self) -> None:
        """Shut the producer down (it notifies the proxy and stops its threads)."""
        with self._lock:
            producer, self._producer = self._producer, None
        if producer is not None:
            producer.shutdown()

    def _started(self) -> Any:
        with self._lock:
            if self._producer is None:
                target = self._target
                configuration = _client.ClientConfiguration(
                    target.endpoints,
                    _client.Credentials(target.access_key, target.secret_key),
                    target.namespace,
                    # Whole seconds: the client hands it to a call that takes an int.
                    request_timeout=max(1, math.ceil(self._timeout)),
                )
                producer = _client.Producer(configuration, (target.topic,), tls_enable=target.tls)
                producer.startup()
                self._producer = producer
            return self._producer

    def _properties(self, delivery: Delivery) -> dict[str, str]:
        attributes = cloudevent_attributes(delivery)
        properties = {_PROPERTY.get(k, f"CE_{k}"): v for k, v in attributes.items()}
        if self._signer is not None:
            properties.update(self._signer.sign(attributes, delivery.body).attributes())
        return properties

    def _failure(self, outcome: Outcome, exc: BaseException) -> PublishResult:
        return PublishResult(outcome, bounded_error(f"{type(exc).__name__}: {exc}", self._secrets))


# The client's exception classes (rocketmq.v5.exception), by what they say of the event.
_CHANNEL = frozenset({"UnauthorizedException", "ForbiddenException", "NotFoundException"})
_REJECTED = frozenset(
    {
        "BadRequestException",
        "PayloadTooLargeException",
        "PayloadEmptyException",
        "RequestHeaderFieldsTooLargeException",
        "IllegalArgumentException",
        "PaymentRequiredException",
    }
)

if TYPE_CHECKING:
    from firestore_outbox.publishers.rocketmq.settings import RocketMqSettings


def outcome_of(exc: BaseException) -> Outcome:
    """A send's exception as an outcome: credentials and missing topics are the channel's,
    and so are a topic route the client could not get (proxy unreachable, credentials or
    topic refused: the client says only "failed to fetch topic") and a topic that does not
    take this kind of message (`RELAY_ROCKETMQ_FIFO` set wrong); a message the broker will
    never take is rejected; anything else (busy, internal errors, proxy timeouts, a
    connection lost during a send) is retried."""
    name, text = type(exc).__name__, str(exc)
    if name in _CHANNEL or "failed to fetch topic" in text or "accept message types" in text:
        return Outcome.CHANNEL
    if name in _REJECTED:
        return Outcome.REJECTED
    return Outcome.RETRY


def from_settings(settings: RocketMqSettings, options: PublisherOptions) -> RocketMqPublisher:
    """`RELAY_PUBLISHER=rocketmq`: the `RELAY_ROCKETMQ_*` topic
    (`firestore_outbox.publishers.registry`). The
    gRPC client has no connect phase of its own to time: the read timeout bounds a send."""
    target = RocketMqTarget(
        endpoints=settings.endpoints,
        topic=settings.topic,
        fifo=settings.fifo,
        tls=settings.tls,
        namespace=settings.namespace or "",
        access_key=settings.access_key or "",
        secret_key=settings.secret_key or "",
    )
    return RocketMqPublisher(
        target,
        timeout=options["read_timeout"],
        signer=options.get("signer"),
        secrets=options.get("secrets", ()),
    )
