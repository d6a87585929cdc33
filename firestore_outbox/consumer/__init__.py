"""Consuming events: verify a delivery, apply its effect once through the inbox.

    from firestore_outbox.consumer import Inbox, verify_request

    event = verify_request(headers, body, [secret])        # InvalidSignature if forged
    Inbox(db, "billing").process(event.attributes["source"], event.attributes["id"], apply)

A Kafka consumer reads a message the same way: `verify_kafka_message(message.headers(),
message.value(), [secret])`.

A consumer serving HTTP itself can use the reference receiver's parts: `Receiver` (a small
threaded HTTP server around a responder, which returns a `ReceiverAnswer`), `read_delivery` /
`to_cloudevent` (a request into a verified `cloudevents` event), `DeliveryRefused`,
`refused_answer` and `json_answer` (the answers the relay's wire table expects),
`process_span`, `record_consumed` and `log_event` (one trace from the commit to the effect,
the consumed-events counter, a JSON log line with fields). Names load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from firestore_outbox._lazy import lazy_exports

if TYPE_CHECKING:
    from firestore_outbox.consumer.delivery import (
        DeliveryRefused,
        json_answer,
        read_delivery,
        refused_answer,
        to_cloudevent,
    )
    from firestore_outbox.consumer.events import (
        MalformedDelivery,
        ReceivedEvent,
        parse_kafka_message,
        verify_event,
        verify_kafka_message,
        verify_request,
    )
    from firestore_outbox.consumer.inbox import Inbox, InboxStatus, Verdict
    from firestore_outbox.consumer.metrics import record_consumed
    from firestore_outbox.consumer.receiver import Received, Receiver, ReceiverAnswer
    from firestore_outbox.consumer.receiver_settings import ReceiverConfig
    from firestore_outbox.observability.logs import log_event
    from firestore_outbox.observability.tracing import process_span, record_answer
    from firestore_outbox.signing import InvalidSignature

__all__ = [
    "DeliveryRefused",
    "Inbox",
    "InboxStatus",
    "InvalidSignature",
    "MalformedDelivery",
    "Received",
    "ReceivedEvent",
    "Receiver",
    "ReceiverAnswer",
    "ReceiverConfig",
    "Verdict",
    "json_answer",
    "log_event",
    "parse_kafka_message",
    "process_span",
    "read_delivery",
    "record_answer",
    "record_consumed",
    "refused_answer",
    "to_cloudevent",
    "verify_event",
    "verify_kafka_message",
    "verify_request",
]

# Names that left this list, importable from here with a DeprecationWarning for one release
# (docs/upgrading.md).
_MOVED = {
    "Answer": "firestore_outbox.consumer.ReceiverAnswer",
    "load_receiver_config": "firestore_outbox.load_receiver_config",
}

__getattr__ = lazy_exports(__name__, _MOVED)
