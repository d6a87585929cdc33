"""The `amqp` publisher's settings: the broker URL (it holds the password, so it is never
echoed), the exchange and the routing key, read from `RELAY_AMQP_*` and checked."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from firestore_outbox.errors import ConfigError
from firestore_outbox.publishers.settings import Get, required

# AMQP 0-9-1 short strings (exchange and routing key among them) are at most 255 bytes.
MAX_SHORT_STRING = 255


@dataclass(frozen=True, kw_only=True)
class AmqpSettings:
    """`RELAY_AMQP_URL` (amqp:// or amqps://), `RELAY_AMQP_EXCHANGE` (default: the default
    exchange) and `RELAY_AMQP_ROUTING_KEY` (None: each event's type);
    `firestore_outbox/publishers/amqp/publisher.py`."""

    amqp_url: str | None = field(default=None, repr=False)
    amqp_exchange: str = ""
    amqp_routing_key: str | None = None

    def _check_amqp(self) -> None:
        """A URL with a host, and an exchange and routing key that AMQP can carry."""
        required("RELAY_PUBLISHER=amqp", ("RELAY_AMQP_URL", self.amqp_url))
        problem = _amqp_url_problem(str(self.amqp_url))
        if problem:
            raise ConfigError(f"RELAY_AMQP_URL must be a usable amqp:// or amqps:// URL: {problem}")
        for variable, value in (
            ("RELAY_AMQP_EXCHANGE", self.amqp_exchange),
            ("RELAY_AMQP_ROUTING_KEY", self.amqp_routing_key or ""),
        ):
            if len(value.encode("utf-8", "surrogatepass")) > MAX_SHORT_STRING:
                raise ConfigError(f"{variable} must be at most {MAX_SHORT_STRING} bytes")


def read_amqp(get: Get) -> dict[str, Any]:
    """`AmqpSettings`' fields from the environment."""
    return {
        "amqp_url": get("RELAY_AMQP_URL"),
        "amqp_exchange": get("RELAY_AMQP_EXCHANGE") or "",
        "amqp_routing_key": get("RELAY_AMQP_ROUTING_KEY"),
    }


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
