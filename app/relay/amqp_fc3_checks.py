"""The configuration checks of the `amqp` and `fc3` publishers: each names the variable that is
missing or wrong, and never echoes a URL (it may hold a password) or a secret."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from app.errors import ConfigError
from app.urls import url_problem

if TYPE_CHECKING:
    from app.relay.config import RelayConfig

# AMQP 0-9-1 short strings (exchange and routing key among them) are at most 255 bytes.
MAX_SHORT_STRING = 255


def check_amqp(config: RelayConfig) -> None:
    """`RELAY_AMQP_URL` (amqp:// or amqps://, with a host), and an exchange and routing key
    that AMQP can carry."""
    if not config.amqp_url:
        raise ConfigError("RELAY_AMQP_URL is not set: RELAY_PUBLISHER=amqp needs it")
    problem = _amqp_url_problem(config.amqp_url)
    if problem:
        raise ConfigError(f"RELAY_AMQP_URL must be a usable amqp:// or amqps:// URL: {problem}")
    for variable, value in (
        ("RELAY_AMQP_EXCHANGE", config.amqp_exchange),
        ("RELAY_AMQP_ROUTING_KEY", config.amqp_routing_key or ""),
    ):
        if len(value.encode("utf-8", "surrogatepass")) > MAX_SHORT_STRING:
            raise ConfigError(f"{variable} must be at most {MAX_SHORT_STRING} bytes")


def check_fc3(config: RelayConfig) -> None:
    """`RELAY_FC_ENDPOINT`, `RELAY_FC_FUNCTION` and the AccessKey pair (no service: FC 3.0
    has none); asynchronous invocation only."""
    for variable, value in (
        ("RELAY_FC_ENDPOINT", config.fc_endpoint),
        ("RELAY_FC_FUNCTION", config.fc_function),
        ("ALIBABA_CLOUD_ACCESS_KEY_ID", config.access_key_id),
        ("ALIBABA_CLOUD_ACCESS_KEY_SECRET", config.access_key_secret),
    ):
        if not value:
            raise ConfigError(f"{variable} is not set: RELAY_PUBLISHER=fc3 needs it")
    problem = url_problem(str(config.fc_endpoint))
    if problem:
        raise ConfigError(f"RELAY_FC_ENDPOINT must be a usable http:// or https:// URL: {problem}")
    if config.fc_invocation_type != "async":
        raise ConfigError(
            "RELAY_FC_INVOCATION_TYPE must be async with RELAY_PUBLISHER=fc3: its task ids, "
            "which let Function Compute refuse a duplicate, exist only for asynchronous calls"
        )


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
