"""What a Kafka error says of the event: librdkafka's error codes mapped onto the relay's
outcomes (`firestore_outbox.publishers.base.Outcome`).

A message the broker will never take as it is (too large, an invalid record) is REJECTED: that
event alone goes FAILED. Refused credentials or authorization, a topic that does not exist, a
broker that cannot be resolved, reached or talked TLS to: the channel is broken, not the event
(CHANNEL: no attempt is spent, the relay's breaker stops the run). Anything else (a timeout, a
lost connection, a leader moving, not enough replicas, the producer's own fatal state) may
succeed later: RETRY.
"""

from __future__ import annotations

from confluent_kafka import KafkaError

from firestore_outbox.publishers.base import Outcome


def _codes(*names: str) -> frozenset[int]:
    # By name: a code a given librdkafka does not define is simply not mapped.
    return frozenset(getattr(KafkaError, name) for name in names if hasattr(KafkaError, name))


REJECTED = _codes(
    "MSG_SIZE_TOO_LARGE",
    "_MSG_SIZE_TOO_LARGE",
    "INVALID_MSG",
    "INVALID_MSG_SIZE",
    "INVALID_RECORD",
    "RECORD_LIST_TOO_LARGE",
    "_INVALID_ARG",
    "_BAD_MSG",
)
CHANNEL = _codes(
    "TOPIC_AUTHORIZATION_FAILED",
    "CLUSTER_AUTHORIZATION_FAILED",
    "SASL_AUTHENTICATION_FAILED",
    "UNSUPPORTED_SASL_MECHANISM",
    "ILLEGAL_SASL_STATE",
    "_AUTHENTICATION",
    "UNKNOWN_TOPIC_OR_PART",
    "_UNKNOWN_TOPIC",
    "_UNKNOWN_PARTITION",
    "TOPIC_EXCEPTION",
    "_SSL",
    "_RESOLVE",
    "_ALL_BROKERS_DOWN",
)

# What the producer's error callback says of the connection itself: the channel's fault when
# it comes while a message waits for its report (a failed connection among them: a broker
# down, a login refused at reconnect).
LINK = CHANNEL | _codes("_TRANSPORT")


def outcome_of(code: int) -> Outcome:
    """The outcome of a delivery report's (or `produce()`'s) error code."""
    if code in REJECTED:
        return Outcome.REJECTED
    if code in CHANNEL:
        return Outcome.CHANNEL
    return Outcome.RETRY


def describe(error: KafkaError) -> str:
    """`Kafka <NAME>: <text>`, one line (bounded and masked by the publisher)."""
    return f"Kafka {error.name()}: {error.str()}"
