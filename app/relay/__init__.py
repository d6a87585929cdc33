"""The relay core: lease due outbox events, publish them, settle them. No I/O at import."""

from app.relay.config import RelayConfig, load_relay_config
from app.relay.core import Relay
from app.relay.publishers import Delivery, Outcome, Publisher, PublishResult

__all__ = [
    "Delivery",
    "Outcome",
    "PublishResult",
    "Publisher",
    "Relay",
    "RelayConfig",
    "load_relay_config",
]
