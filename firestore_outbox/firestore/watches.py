"""`Watches`: several listen streams as one, for a window no single query can cover (a
query's `partition in` filter takes at most 30 partitions).

Active while every stream is; unsubscribed together; the callback hears nothing until each
stream has sent its first snapshot (until then the window is not known), then every change
of any of them, with that stream's documents.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from google.cloud.firestore import Watch


class Watches:
    """Listens to each of `queries` with `on_snapshot(documents, changes, read_time)`."""

    def __init__(self, queries: Sequence[Any], on_snapshot: Callable[..., None]) -> None:
        self._lock = threading.Lock()
        self._seen: set[int] = set()
        self._count = len(queries)
        self._on_snapshot = on_snapshot
        self.watches: list[Watch] = [
            query.on_snapshot(self._heard(n)) for n, query in enumerate(queries)
        ]

    @property
    def is_active(self) -> bool:
        return all(watch.is_active for watch in self.watches)

    @property
    def has_pushed(self) -> bool:
        """Whether every stream has sent its first snapshot."""
        return all(watch.has_pushed for watch in self.watches)

    def unsubscribe(self) -> None:
        for watch in self.watches:
            watch.unsubscribe()  # type: ignore[no-untyped-call]

    def _heard(self, n: int) -> Callable[..., None]:
        def heard(documents: Any, changes: Any, read_time: Any) -> None:
            with self._lock:
                self._seen.add(n)
                if len(self._seen) < self._count:
                    return
            self._on_snapshot(documents, changes, read_time)

        return heard
