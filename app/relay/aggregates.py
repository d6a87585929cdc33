"""`Aggregates`: per-aggregate order in memory, for the partitions one invocation holds.

Holding a partition makes this invocation the only one delivering its events, so what it read
is the truth until it settles: events wait in one queue per aggregate, in the order the
partition query returned them (commit order, then batch order). At most one event per
aggregate is in flight; the next one goes only once the one before was delivered (or failed
for good with `RELAY_FAILED_HEAD=skip`), without waiting for its settle: a settle that does
not land only means the event is delivered again, after the later ones, and consumers
deduplicate on its id. Anything else blocks the aggregate for the rest of
the run (a retry, a hold, a lost settle, an event never sent), while the other aggregates of
the same partition go on. With `RELAY_ORDERING=none` every event is its own queue.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING

from app.cas import WriteOutcome
from app.relay.publishers import Outcome, PublishResult

if TYPE_CHECKING:
    from app.cas import Written
    from app.firestore_raw import Found
    from app.relay.config import RelayConfig
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
        self._partitions: dict[str, int] = {}  # event id -> its partition, until settled

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
                self._partitions[document.id] = partition
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
        """The settler's word on a settle: a lost one means the partition was taken over
        (its aggregates already went on or stopped when the publish ended)."""
        if written is not None and written.outcome is WriteOutcome.LOST:
            partition = self._partitions.pop(lease.event.event_id, None)
            with self.changed:
                if partition is not None:
                    self.lost.add(partition)
        else:
            self._partitions.pop(lease.event.event_id, None)

    def ready(self) -> int:
        """Events waiting whose aggregate is neither blocked nor in flight."""
        with self.changed:
            return sum(
                len(q)
                for k, q in self._queues.items()
                if k not in self._active and k not in self._blocked
            )

    @property
    def in_flight(self) -> int:
        with self.changed:
            return len(self._active)

    def waiting(self) -> int:
        """Events read and still waiting, blocked or not."""
        with self.changed:
            return sum(len(q) for q in self._queues.values())


def goes_on(result: PublishResult | None, attempt: int, config: RelayConfig) -> bool:
    """Whether an aggregate's next event may follow this publish: it was delivered, or it
    failed for good and `RELAY_FAILED_HEAD=skip`."""
    if result is None:
        return False
    if result.outcome is Outcome.DELIVERED:
        return True
    failed = result.outcome is Outcome.REJECTED or (
        result.outcome is Outcome.RETRY and attempt >= config.max_attempts
    )
    return failed and config.failed_head == "skip"
