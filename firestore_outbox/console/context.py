"""What every page and action of one console shares."""

from __future__ import annotations

import datetime
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from firestore_outbox.console.chart import History
from firestore_outbox.console.html import Html
from firestore_outbox.firestore.outbox_collections import OutboxCollections
from firestore_outbox.health.reading import Watched
from firestore_outbox.health.settings import Thresholds
from firestore_outbox.ops.history import Recent
from firestore_outbox.redrive.jobs import JobStore

if TYPE_CHECKING:
    from google.cloud.firestore import Client

# How many FAILED events a page lists (the count above it is complete).
LIST_LIMIT = 100


class RecentCache:
    """The last half hour's reading (`read_recent`), kept `KEEP_SECONDS`: a page refreshed
    every 5 s reads it once a minute, not twelve times."""

    KEEP_SECONDS = 60.0

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: tuple[float, Recent] | None = None

    def get(self, read: Callable[[], Recent]) -> Recent:
        with self._lock:
            if self._kept is None or time.monotonic() - self._kept[0] > self.KEEP_SECONDS:
                self._kept = (time.monotonic(), read())
            return self._kept[1]


@dataclass(frozen=True)
class Context:
    """The console's Firestore client (every call bounded by `timeout`), its collections,
    its HTML builder and the overview's history."""

    db: Client
    collections: OutboxCollections
    partitions: int
    lock_timeout_seconds: float
    timeout: float
    html: Html
    refresh_seconds: float = 5.0
    history: History = field(default_factory=History)
    # The relay's heartbeat and the watchdog's thresholds: the health panel judges as it does.
    thresholds: Thresholds = field(default_factory=Thresholds)
    recent: RecentCache = field(default_factory=lambda: RecentCache())

    @staticmethod
    def now() -> datetime.datetime:
        return datetime.datetime.now(datetime.timezone.utc)

    @property
    def collection(self) -> str:
        """The outbox's collection (the events)."""
        return self.collections.outbox

    @property
    def watched(self) -> Watched:
        """What the health panel reads: this console's outbox, partitions and heartbeat."""
        return Watched(
            self.collections.outbox,
            self.collections.health,
            self.collections.partitions,
            self.partitions,
            self.lock_timeout_seconds,
        )

    def job_store(self) -> JobStore:
        """The re-drive jobs of this console's outbox (the Re-drive page, the health panel)."""
        return JobStore(
            self.db,
            self.collections.redrive,
            lease_seconds=self.lock_timeout_seconds,
            timeout=self.timeout,
        )
