"""`make_watchdog`: the watchdog wired from one configuration, for `outbox watchdog` and the
watchdog's Function Compute handler alike. It needs no downstream: only the outbox, its
partitions and lease timeout, and the `WATCHDOG_*` variables."""

from __future__ import annotations

from typing import TYPE_CHECKING

from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.firestore.deadline import with_deadline
from firestore_outbox.health.watchdog import Watchdog

if TYPE_CHECKING:
    from google.cloud.firestore import Client

    from firestore_outbox.config.loader import Configuration

__all__ = ["make_watchdog"]


def make_watchdog(configuration: Configuration, db: Client | None = None) -> Watchdog:
    """A `Watchdog` over `configuration`'s outbox; `db` (default: a new client) gets every
    call bounded by `WATCHDOG_TIMEOUT_SECONDS`. `ConfigError` names a bad variable."""
    watchdog = configuration.watchdog()
    settings = configuration.settings
    partitions = configuration.partitions()
    client = with_deadline(db or get_db_client(settings), watchdog.timeout_seconds)
    return Watchdog(
        client,
        settings,
        watchdog,
        partitions=partitions.count,
        collections=configuration.collections,
        lock_timeout_seconds=configuration.seconds("RELAY_LOCK_TIMEOUT_SECONDS", 300.0),
    )
