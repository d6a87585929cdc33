"""What every page and action of one console shares."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from firestore_outbox.console.chart import History
from firestore_outbox.console.html import Html

if TYPE_CHECKING:
    from google.cloud.firestore import Client

# How many FAILED events a page lists (the count above it is complete).
LIST_LIMIT = 100


@dataclass(frozen=True)
class Context:
    """The console's Firestore client (every call bounded by `timeout`), its collections,
    its HTML builder and the overview's history."""

    db: Client
    collection: str
    partition_collection: str
    partitions: int
    lock_timeout_seconds: float
    timeout: float
    html: Html
    refresh_seconds: float = 5.0
    history: History = field(default_factory=History)

    @staticmethod
    def now() -> datetime.datetime:
        return datetime.datetime.now(datetime.timezone.utc)
