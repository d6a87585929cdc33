"""The relay core: lease due outbox events, publish them, settle them. No I/O at import."""

from firestore_outbox.publishers.base import Delivery, Outcome, Publisher, PublishResult
from firestore_outbox.relay.config import RelayConfig, load_relay_config
from firestore_outbox.relay.core import Relay

__all__ = [
    "Delivery",
    "Outcome",
    "PublishResult",
    "Publisher",
    "Relay",
    "RelayConfig",
    "load_relay_config",
]
