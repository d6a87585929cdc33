"""The relay core: lease due outbox events, publish them, settle them. No I/O at import.

The names below are loaded on first use (PEP 562): importing any module of the relay runs
this file first, and an eager import of the core here would make every module the core
imports (the publishers among them) import the core back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from firestore_outbox._lazy import lazy_exports

if TYPE_CHECKING:
    from firestore_outbox.publishers.base import Delivery, Outcome, Publisher, PublishResult
    from firestore_outbox.relay.config import RelayConfig
    from firestore_outbox.relay.core import Relay

_LAZY = {
    "Delivery": "firestore_outbox.publishers.base",
    "Outcome": "firestore_outbox.publishers.base",
    "PublishResult": "firestore_outbox.publishers.base",
    "Publisher": "firestore_outbox.publishers.base",
    "Relay": "firestore_outbox.relay.core",
    "RelayConfig": "firestore_outbox.relay.config",
}

__all__ = [
    "Delivery",
    "Outcome",
    "PublishResult",
    "Publisher",
    "Relay",
    "RelayConfig",
]


__getattr__ = lazy_exports(__name__, _LAZY)
