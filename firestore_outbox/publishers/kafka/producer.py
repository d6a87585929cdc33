"""`ProducerSession`: the relay's one Kafka producer, made when the publisher is built (so
that librdkafka's refusal of a setting is a `ConfigError` naming the variable before any event
is read: `refused`) and kept warm across runs (a warm Function Compute instance reuses it),
with what its error callback last said.

The producer is idempotent (`enable.idempotence=true`, `acks=all`): librdkafka's own retries
inside a session neither duplicate nor reorder a partition's messages. A broker that refuses
the idempotent producer (it lacks `InitProducerId`, or refuses the right to it) makes
librdkafka raise a fatal error: the session then replaces the producer with one that is not
idempotent and keeps one request in flight per connection (`max.in.flight=1`), so its retries
cannot reorder either, and says so in the log. Any other fatal error (a sequence gap) gets a
new idempotent producer. Messages the old producer still held are answered by the publisher
as retries: nothing is lost, at worst sent twice (the consumer deduplicates on `ce_id`).

Each message's delivery report is served by whichever publishing thread polls first
(`poll()` is thread-safe); no thread of its own runs between invocations.
"""

from __future__ import annotations

import logging
import math
import re
import threading
import time
from typing import Any

from confluent_kafka import KafkaError, Producer

from firestore_outbox.errors import ConfigError
from firestore_outbox.publishers.kafka.outcomes import LINK, describe
from firestore_outbox.publishers.kafka.settings import KafkaSettings

logger = logging.getLogger("firestore_outbox.publishers.kafka")
# Fatal errors that mean "this broker will not run an idempotent producer".
REFUSED_IDEMPOTENCE = frozenset(
    getattr(KafkaError, name)
    for name in (
        "_UNSUPPORTED_FEATURE",
        "UNSUPPORTED_VERSION",
        "CLUSTER_AUTHORIZATION_FAILED",
        "UNSUPPORTED_FOR_MESSAGE_FORMAT",
    )
    if hasattr(KafkaError, name)
)
IDEMPOTENT = {"enable.idempotence": True, "acks": "all"}
ONE_IN_FLIGHT = {
    "enable.idempotence": False,
    "acks": "all",
    "max.in.flight.requests.per.connection": 1,
}


# The variable behind each librdkafka property `client_config` sets from the settings, for
# naming it when librdkafka refuses the producer ("ssl.ca.location failed: ...").
VARIABLES = {
    "ssl.ca.location": "RELAY_KAFKA_CA_FILE",
    "ssl.endpoint.identification.algorithm": "RELAY_KAFKA_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM",
    "sasl.mechanism": "RELAY_KAFKA_SASL_MECHANISM",
    "sasl.username": "RELAY_KAFKA_USERNAME",
    "sasl.password": "RELAY_KAFKA_PASSWORD",
    "security.protocol": "RELAY_KAFKA_SECURITY_PROTOCOL",
    "bootstrap.servers": "RELAY_KAFKA_BOOTSTRAP_SERVERS",
}


def refused(error: KafkaError) -> ConfigError:
    """librdkafka refused to make the producer (`Producer(...)` raised `error`): a
    `ConfigError` naming the variables of the properties its message names (all the
    `RELAY_KAFKA_*` ones it may be about when it names none)."""
    text = error.str()
    named = [variable for prop, variable in VARIABLES.items() if prop in text]
    variables = ", ".join(named or ["RELAY_KAFKA_*"])
    return ConfigError(f"{variables}: librdkafka cannot make the Kafka producer: {text}")


def client_config(settings: KafkaSettings, connect_timeout: float, bound: float) -> dict[str, Any]:
    """librdkafka's settings for `settings`: a message not acknowledged within `bound`
    seconds is given up by the producer itself (`message.timeout.ms`), so nothing it holds
    outlives the attempt that sent it by much."""
    config: dict[str, Any] = {
        "bootstrap.servers": settings.bootstrap_servers,
        "security.protocol": settings.security_protocol,
        "client.id": "firestore-outbox-relay",
        "message.timeout.ms": max(1, round(bound * 1000)),
        "socket.connection.setup.timeout.ms": max(1000, round(connect_timeout * 1000)),
        "linger.ms": 5,
    }
    if settings.sasl:
        config.update(
            {
                "sasl.mechanism": settings.sasl_mechanism,
                "sasl.username": settings.username,
                "sasl.password": settings.password,
            }
        )
    if settings.security_protocol.endswith("SSL"):
        config["ssl.endpoint.identification.algorithm"] = settings.hostname_check
        if settings.ca_file:
            config["ssl.ca.location"] = settings.ca_file
    return config


class ProducerSession:
    """The producer for one configuration; `producer()` makes it (again) when needed."""

    def __init__(self, config: dict[str, Any]) -> None:
        self._config = config
        self._lock = threading.Lock()
        self._producer: Any = None
        self._fatal: KafkaError | None = None
        self.idempotent = True
        # The last connection-level error (credentials, resolution, TLS, all brokers down, a
        # connection that failed) and when (`time.monotonic()`), until a message is
        # acknowledged again: what a message that got no answer during its attempt is blamed on.
        self._link_error: tuple[str, float] | None = None
        self._acknowledged_at = -math.inf

    def producer(self) -> Any:
        """The current producer: a new one after a fatal error or a stall (see the module
        docstring and `stalled`)."""
        with self._lock:
            if self._fatal is not None:
                fatal, self._fatal = self._fatal, None
                if self.idempotent and fatal.code() in REFUSED_IDEMPOTENCE:
                    self.idempotent = False
                    logger.warning(
                        "the broker refused the idempotent producer (%s): publishing without "
                        "idempotence, one request in flight",
                        describe(fatal),
                    )
                self._producer = None
            if self._producer is None:
                mode = IDEMPOTENT if self.idempotent else ONE_IN_FLIGHT
                made: list[Any] = []  # its error callback knows which producer it is for
                config = {**self._config, **mode, "logger": _log}
                config["error_cb"] = lambda error: self._on_error(made[0] if made else None, error)
                made.append(Producer(config))
                self._producer = made[0]
            return self._producer

    def failed(self, producer: Any, error: KafkaError) -> None:
        """`producer` raised a fatal error (to its error callback, or out of `produce()` or
        `poll()`): the next `producer()` replaces it."""
        with self._lock:
            if producer is self._producer and self._fatal is None:
                self._fatal = error

    def fatal(self, producer: Any) -> bool:
        """Whether `producer` is no longer usable (a fatal error was raised on it)."""
        with self._lock:
            return producer is not self._producer or self._fatal is not None

    def acknowledged(self) -> None:
        """A message was acknowledged: the connection works."""
        self._link_error = None
        self._acknowledged_at = time.monotonic()

    def stalled(self, producer: Any, since: float) -> None:
        """A message sent at `since` got no report within its attempt: if nothing at all was
        acknowledged since, `producer` is replaced on next use. (librdkafka's idempotent
        producer can stall for good: a broker that lost its state answers UNKNOWN_PRODUCER_ID
        and hands out the same producer id again, seen on Tansu with 2.3.0 and 2.16.1.)"""
        if self._acknowledged_at < since:
            stall = KafkaError(KafkaError._TIMED_OUT, "no delivery report", fatal=False)
            self.failed(producer, stall)

    def link_error(self, since: float) -> str | None:
        """The connection-level error reported at or after `since`, if any."""
        found = self._link_error
        return found[0] if found is not None and found[1] >= since else None

    def close(self, timeout: float) -> None:
        """Deliver what is queued for at most `timeout` seconds, then let the producer go."""
        with self._lock:
            producer, self._producer = self._producer, None
        if producer is not None:
            producer.flush(timeout)

    def _on_error(self, producer: Any, error: KafkaError) -> None:
        if error.fatal():
            self.failed(producer, error)
            logger.error("the Kafka producer failed: %s", describe(error))
        elif error.code() in LINK:
            self._link_error = (describe(error), time.monotonic())


class _OncePerMinute(logging.LoggerAdapter):  # type: ignore[type-arg]
    """librdkafka's own log lines, each kind at most once a minute: a refused login or a
    broker down is retried every few hundred milliseconds, each time with a line."""

    def __init__(self) -> None:
        super().__init__(logging.getLogger("firestore_outbox.publishers.kafka.librdkafka"), {})
        self._last: dict[str, float] = {}
        self._lock = threading.Lock()

    def log(self, level: int, msg: object, *args: object, **kwargs: Any) -> None:
        kind = re.sub(r"[0-9]+", "N", str(args[:2]) + str(msg))[:200]
        now = time.monotonic()
        with self._lock:
            if now - self._last.get(kind, -math.inf) < 60.0:
                return
            self._last[kind] = now
        super().log(level, msg, *args, **kwargs)


_log = _OncePerMinute()
