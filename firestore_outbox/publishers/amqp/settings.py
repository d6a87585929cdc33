"""The `amqp` publisher's settings: the broker URL (it holds the password, so it is never
echoed), the exchange and the routing key, read from `RELAY_AMQP_*` and checked."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar
from urllib.parse import urlsplit

from firestore_outbox.errors import ConfigError
from firestore_outbox.numbers import Get
from firestore_outbox.publishers.http.urls import url_secrets
from firestore_outbox.publishers.settings import PublisherSettings, required

# AMQP 0-9-1 short strings (exchange and routing key among them) are at most 255 bytes.
MAX_SHORT_STRING = 255


@dataclass(frozen=True, kw_only=True)
class AmqpSettings(PublisherSettings):
    """`url`: `RELAY_AMQP_URL` (amqp:// or amqps://; it holds the password),
    `exchange`: `RELAY_AMQP_EXCHANGE` (default: the default exchange) and `routing_key`:
    `RELAY_AMQP_ROUTING_KEY` (None: each event's type);
    `firestore_outbox.publishers.amqp.publisher`."""

    name: ClassVar[str] = "amqp"
    url: str = field(repr=False)
    exchange: str = ""
    routing_key: str | None = None

    def __post_init__(self) -> None:
        """A URL with a host, and an exchange and routing key that AMQP can carry."""
        required("RELAY_PUBLISHER=amqp", ("RELAY_AMQP_URL", self.url))
        problem = _amqp_url_problem(self.url)
        if problem:
            raise ConfigError(f"RELAY_AMQP_URL must be a usable amqp:// or amqps:// URL: {problem}")
        for variable, value in (
            ("RELAY_AMQP_EXCHANGE", self.exchange),
            ("RELAY_AMQP_ROUTING_KEY", self.routing_key or ""),
        ):
            if len(value.encode("utf-8", "surrogatepass")) > MAX_SHORT_STRING:
                raise ConfigError(f"{variable} must be at most {MAX_SHORT_STRING} bytes")

    @classmethod
    def from_environment(cls, get: Get) -> AmqpSettings:
        return cls(
            url=get("RELAY_AMQP_URL") or "",
            exchange=get("RELAY_AMQP_EXCHANGE") or "",
            routing_key=get("RELAY_AMQP_ROUTING_KEY"),
        )

    def destination(self) -> str:
        return self.exchange or "(default exchange)"

    def secrets(self) -> tuple[str, ...]:
        """The URL's parts that hold the password (as the logs mask them)."""
        return tuple(url_secrets(self.url))


def _amqp_url_problem(url: str) -> str | None:
    try:
        parts = urlsplit(url)
        port = parts.port  # raises on a port that is not a number in range
    except ValueError:
        return "it cannot be parsed"
    if parts.scheme not in ("amqp", "amqps"):
        return "another scheme or none"
    if not parts.hostname:
        return "no host"
    if port == 0:
        return "port 0"
    if any(ord(c) < 0x21 or ord(c) == 0x7F for c in url):
        return "spaces or control characters"
    return None
