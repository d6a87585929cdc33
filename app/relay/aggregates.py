"""`Aggregates`: per-aggregate order in memory, for the partitions one invocation holds.

Holding a partition makes this invocation the only one delivering its events, so what it read
is the truth until it settles: events wait in one queue per aggregate, in the order the
partition query returned them (commit order, then batch order). At most one event per
aggregate is in flight; the next one goes only once the one before is `PROCESSED` (or
`FAILED` with `RELAY_FAILED_HEAD=skip`). Anything else blocks the aggregate for the rest of
the run (a retry, a hold, a lost settle, an event never sent), while the other aggregates of
the same partition go on. With `RELAY_ORDERING=none` every event is its own queue.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING

from app.cas import WriteOutcome

if TYPE_CHECKING:
    from app.cas import Written
    from app.firestore_raw import Found
    from app.relay.settler import Lease


class Aggregates:
    """Queues of read events by aggregate; `settled()` is the settler's callback."""

    def __init__(self, *, ordered: bool, skip_failed: bool) -> None:
        self._ordered = ordered
        self._skip_failed = skip_failed
        self.changed = threading.Condition()
        self._queues: dict[str, deque[tuple[int, Found]]] = {}
        self._blocked: set[str] = set()
        self._active: dict[str, int] = {}  # aggregate -> the partition of its event in flight
        self.lost: set[int] = set()  # partitions whose settles were refused: not ours any more

    def key(self, document: Found) -> str:
        data = document.to_dict() or {}
        aggregate = data.get("aggregateId")
        if self._ordered and isinstance(aggregate, str):
            return aggregate
        return "\0" + document.id  # unordered, or no usable aggregate: a queue of its own

    def add(self, partition: int, documents: Iterable[Found]) -> None:
        with self.changed:
            for document in documents:
                key = self.key(document)
                if key not in self._blocked:  # a blocked aggregate's events are not kept
                    self._queues.setdefault(key, deque()).append((partition, document))

    def block(self, aggregates: Iterable[str]) -> None:
        with self.changed:
            for key in aggregates:
                self._blocked.add(key)
                self._queues.pop(key, None)

    def heads(self, limit: int) -> list[tuple[str, int, Found]]:
        """Up to `limit` heads of aggregates neither blocked nor in flight, taken off their
        queues and counted in flight (`put_back` or `settled` ends that)."""
        taken: list[tuple[str, int, Found]] = []
        with self.changed:
            for key, queue in list(self._queues.items()):
                if len(taken) >= limit:
                    break
                if key in self._active or key in self._blocked or not queue:
                    continue
                partition, document = queue.popleft()
                if not queue:
                    del self._queues[key]
                if partition in self.lost:
                    continue
                self._active[key] = partition
                taken.append((key, partition, document))
        return taken

    def finish(self, key: str, *, go_on: bool) -> None:
        """The event in flight for `key` is done; `go_on` False blocks the aggregate."""
        with self.changed:
            self._active.pop(key, None)
            if not go_on:
                self._blocked.add(key)
                self._queues.pop(key, None)
            self.changed.notify_all()

    def settled(self, lease: Lease, kind: str, written: Written | None) -> None:
        """How a settle ended decides whether the aggregate's next event may go."""
        key = lease.event.aggregate_id if self._ordered else "\0" + lease.event.event_id
        with self.changed:
            partition = self._active.get(key)
        applied = written is not None and written.applied
        go_on = applied and (kind == "processed" or (kind == "failed" and self._skip_failed))
        if written is not None and written.outcome is WriteOutcome.LOST and partition is not None:
            with self.changed:
                self.lost.add(partition)
        self.finish(key, go_on=go_on)

    @property
    def in_flight(self) -> int:
        with self.changed:
            return len(self._active)

    def waiting(self) -> int:
        """Events read and still waiting, blocked or not."""
        with self.changed:
            return sum(len(q) for q in self._queues.values())
