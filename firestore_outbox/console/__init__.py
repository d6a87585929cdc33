"""`outbox console`: server-rendered pages over the operations layer (`firestore_outbox.ops`)
to see the outbox and put right what failed. See docs/console.md.

    app = make_console(db, settings, token=None, secrets=[])   # a WSGI app

Every reading and every write is a function the `outbox` command also calls; the console adds
pages, access checks (`firestore_outbox.console.access`) and a chart, nothing else.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from firestore_outbox.console.access import Guard
from firestore_outbox.console.app import ConsoleApp
from firestore_outbox.console.context import Context
from firestore_outbox.console.html import Html
from firestore_outbox.firestore.outbox_collections import OutboxCollections
from firestore_outbox.health.settings import Thresholds
from firestore_outbox.partitions import DEFAULT_PARTITIONS

if TYPE_CHECKING:
    from google.cloud.firestore import Client

    from firestore_outbox.firestore.settings import Settings

__all__ = ["ConsoleApp", "make_console"]


def make_console(
    db: Client,
    settings: Settings,
    *,
    token: str | None,
    secrets: Iterable[str],
    lock_timeout_seconds: float = 300.0,
    partition_collection: str | None = None,
    partitions: int = DEFAULT_PARTITIONS,
    refresh_seconds: float = 5.0,
    health_collection: str | None = None,
    thresholds: Thresholds | None = None,
) -> ConsoleApp:
    """The console over `db` (give it a client whose calls are bounded: `ops_client`).
    `token`: required of every request when set; `secrets`: masked wherever shown (the
    token is added); `partitions` and `partition_collection`: the relay's;
    `health_collection` and `thresholds`: the heartbeat's and the watchdog's (the health panel
    judges as the watchdog does). A collection not given is the one derived from
    `settings.outbox_collection` (`OutboxCollections`)."""
    guard = Guard(token)
    masked = tuple(secrets) + ((token,) if token else ())
    ctx = Context(
        db,
        OutboxCollections.of(
            settings.outbox_collection, partitions=partition_collection, health=health_collection
        ),
        partitions,
        lock_timeout_seconds,
        settings.firestore_timeout_seconds,
        Html(masked, guard.csrf),
        refresh_seconds,
        thresholds=thresholds or Thresholds(),
    )
    return ConsoleApp(ctx, guard, settings)
