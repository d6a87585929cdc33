"""`Aggregates`: per-aggregate order in memory, for the partitions one invocation has claimed.

Claiming a partition makes this invocation the only one delivering its events, so what it read
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
from collections import Counter, deque
from collections.abc import Iterable
from typing import TYPE_CHECKING

from firestore_outbox.fields import AGGREGATE_ID
from firestore_outbox.firestore.cas import WriteOutcome
from firestore_outbox.publishers.base import Outcome, PublishResult
from firestore_outbox.relay.lease import Settled
from firestore_outbox.relay.partition_settings import FailedHead

if TYPE_CHECKING:
    from firestore_outbox.firestore.cas import Written
    from firestore_outbox.firestore.raw import Found
    from firestore_outbox.relay.config import RelayConfig
    from firestore_outbox.relay.lease import Lease


class Aggregates:
    """Queues of read events by aggregate; `settled()` is the settler's callback.

    Every operation costs O(1) per event (a queue of aggregates ready to go, counts kept as
    they change): the drain calls them on each publish that ends, and a scan over every
    queue there made a run's CPU grow with the square of its backlog."""

    def __init__(self, *, ordered: bool, skip_failed: bool) -> None:
        self._ordered = ordered
        self._skip_failed = skip_failed
        self.changed = threading.Condition()
        self._queues: dict[str, deque[tuple[int, Found]]] = {}
        self._blocked: set[str] = set()
        self._active: dict[str, int] = {}  # aggregate -> the partition of its event in flight
        # Aggregates whose head may go now, in the order they became ready (a key in
        # `_ready_keys` is neither blocked nor active and has a non-empty queue).
        self._ready: deque[str] = deque()
        self._ready_keys: set[str] = set()
        self._waiting = 0  # events in `_queues`
        self.lost: set[int] = set()  # partitions whose settles were refused: not ours any more
        # Partitions with an event handed back unsent (its lease ran short before its publish
        # could start, the settles stalled): their visit is not done, whatever is open there.
        self.unsent: set[int] = set()
        self._partitions: dict[str, int] = {}  # event id -> its partition, until settled
        self._open: Counter[int] = Counter()  # partition -> events read and not settled

    def key(self, document: Found) -> str:
        data = document.to_dict() or {}
        aggregate = data.get(AGGREGATE_ID)
        if self._ordered and isinstance(aggregate, str):
            return aggregate
        return "\0" + document.id  # unordered, or no usable aggregate: a queue of its own

    def add(self, partition: int, documents: Iterable[Found]) -> None:
        with self.changed:
            for document in documents:
                key = self.key(document)
                if key in self._blocked:  # a blocked aggregate's events are not kept
                    continue
                queue = self._queues.setdefault(key, deque())
                queue.append((partition, document))
                self._waiting += 1
                self._open[partition] += 1
                if len(queue) == 1 and key not in self._active:
                    self._mark_ready(key)
            self.changed.notify_all()

    def block(self, aggregates: Iterable[str]) -> None:
        with self.changed:
            for key in aggregates:
                self._blocked.add(key)
                self._drop(key)

    def heads(self, limit: int) -> list[tuple[str, int, Found]]:
        """Up to `limit` heads of aggregates neither blocked nor in flight, taken off their
        queues and counted in flight (`finish` ends that; `settled` or `abandon` ends the
        event's count in its partition)."""
        taken: list[tuple[str, int, Found]] = []
        with self.changed:
            while self._ready and len(taken) < limit:
                key = self._ready.popleft()
                if key not in self._ready_keys:
                    continue  # blocked or dropped since it became ready
                self._ready_keys.discard(key)
                queue = self._queues[key]
                partition, document = queue[0]
                if partition in self.lost:
                    self._drop(key)  # one aggregate, one partition: none of it is ours
                    continue
                queue.popleft()
                self._waiting -= 1
                if not queue:
                    del self._queues[key]
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
                self._drop(key)
            elif key in self._queues:
                self._mark_ready(key)
            self.changed.notify_all()

    def abandon(self, event_id: str) -> None:
        """An event taken by `heads` that will not be published (so not settled either)."""
        with self.changed:
            self._close(event_id)

    def settled(self, lease: Lease, kind: Settled, written: Written | None) -> None:
        """The settler's word on a settle: a lost one means the partition was taken over
        (its aggregates already went on or stopped when the publish ended)."""
        with self.changed:
            partition = self._close(lease.event.event_id)
            lost = written is not None and written.outcome is WriteOutcome.LOST
            if lost and partition is not None:
                self.lost.add(partition)
            if kind is Settled.RELEASED and partition is not None:
                self.unsent.add(partition)

    def poke(self) -> None:
        """Wake whoever waits on `changed` (something else it waits for happened)."""
        with self.changed:
            self.changed.notify_all()

    def ready(self) -> int:
        """Aggregates whose next event may go now."""
        with self.changed:
            return len(self._ready_keys)

    def open_in(self, partition: int) -> int:
        """Events of `partition` read and not yet settled (queued, in flight or settling)."""
        with self.changed:
            return self._open[partition]

    @property
    def in_flight(self) -> int:
        """Aggregates with an event being published."""
        with self.changed:
            return len(self._active)

    @property
    def unsettled(self) -> int:
        """Events taken by `heads` and not settled yet (being published, or published and
        waiting for their settle): what a relay killed now would deliver again, at most."""
        with self.changed:
            return len(self._partitions)

    def waiting(self) -> int:
        """Events read and still waiting, blocked or not."""
        with self.changed:
            return self._waiting

    def _mark_ready(self, key: str) -> None:
        if key not in self._ready_keys and key not in self._blocked:
            self._ready_keys.add(key)
            self._ready.append(key)

    def _drop(self, key: str) -> None:
        self._ready_keys.discard(key)
        for partition, _ in self._queues.pop(key, ()):
            self._waiting -= 1
            self._open[partition] -= 1
        self.changed.notify_all()

    def _close(self, event_id: str) -> int | None:
        partition = self._partitions.pop(event_id, None)
        if partition is not None:
            self._open[partition] -= 1
            self.changed.notify_all()
        return partition


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
    return failed and config.partitions.failed_head is FailedHead.SKIP
