"""`Coalescer`: concurrent `publish` calls gathered into one batch request.

The relay publishes from a thread pool (`RELAY_CONCURRENCY` calls in flight) and knows nothing
of batches. A target that takes many events per request (MNS `BatchSendMessage`, EventBridge
`PutEvents`) puts a coalescer behind its `publish`: the first caller to find no open batch
opens one and leads it; later callers join it until it is full (entries or bytes) or the
leader's short linger passes. The leader then sends the whole batch in one request, bounded
by the earliest deadline among its entries, and every caller gets back its own entry's result.
A failed entry is that event's result alone, so only that event is retried later.

Timeline of one batch (linger L, earliest deadline D):
  t0       caller A finds no open batch: opens it, leads, waits up to min(L, D - now)
  t0+x     callers B, C join (each still under the limits); a joiner that fills it wakes A
  t0+L     A closes the batch (later callers open the next one) and sends it
  answer   A stores one result per entry and wakes B and C, each takes its own
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from firestore_outbox.publishers.base import Delivery, Outcome, PublishResult

# Sends one batch by the deadline given (None: unbounded) and answers one result per entry,
# in order. It should not raise; if it does, every entry is retried.
SendBatch = Callable[[Sequence[Delivery], float | None], Sequence[PublishResult]]

# How long a joiner waits past its own deadline for the leader's answer before giving up:
# the leader's request is bounded by that deadline, so this is only a safety net.
_GRACE_SECONDS = 5.0
# A joiner without a deadline waits this long at most.
_UNBOUNDED_WAIT_SECONDS = 300.0


@dataclass
class _Batch:
    entries: list[Delivery] = field(default_factory=list)
    size: int = 0
    closed: bool = False
    full: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)
    results: Sequence[PublishResult] = ()

    def deadline(self) -> float | None:
        deadlines = [d.deadline for d in self.entries if d.deadline is not None]
        return min(deadlines) if deadlines else None


class Coalescer:
    """Gathers concurrent `publish` calls into batches of at most `max_entries` deliveries and
    `max_bytes` (as `size_of` measures each), waits at most `linger` seconds for a batch to
    fill, and sends each batch with `send`. A delivery larger than `max_bytes` alone is sent in
    a batch of its own (the target decides what it makes of it)."""

    def __init__(
        self,
        send: SendBatch,
        *,
        max_entries: int,
        max_bytes: int | None = None,
        size_of: Callable[[Delivery], int] = lambda delivery: len(delivery.body),
        linger: float = 0.005,
    ) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self._send = send
        self._max_entries = max_entries
        self._max_bytes = max_bytes
        self._size_of = size_of
        self._linger = linger
        self._lock = threading.Lock()
        self._open: _Batch | None = None

    def publish(self, delivery: Delivery) -> PublishResult:
        """Send `delivery` in the next batch; its own result, whatever the others' are."""
        size = self._size_of(delivery)
        with self._lock:
            batch = self._open
            leader = batch is None or not self._fits(batch, size)
            if leader:
                if batch is not None:
                    self._close(batch)
                batch = self._open = _Batch()
            assert batch is not None
            index = len(batch.entries)
            batch.entries.append(delivery)
            batch.size += size
            if len(batch.entries) >= self._max_entries:
                self._close(batch)
        if leader:
            self._lead(batch)
        elif not batch.done.wait(self._joiner_wait(delivery)):
            return PublishResult(Outcome.RETRY, "timeout: the batch it joined had no answer")
        return batch.results[index]

    def _fits(self, batch: _Batch, size: int) -> bool:
        if batch.closed or len(batch.entries) >= self._max_entries:
            return False
        return self._max_bytes is None or batch.size + size <= self._max_bytes

    def _close(self, batch: _Batch) -> None:
        """Called under the lock: no one joins `batch` any more, and its leader stops waiting."""
        batch.closed = True
        if self._open is batch:
            self._open = None
        batch.full.set()

    def _lead(self, batch: _Batch) -> None:
        linger = self._linger
        first = batch.entries[0].deadline
        if first is not None:
            linger = min(linger, max(0.0, first - time.monotonic()))
        batch.full.wait(linger)
        with self._lock:
            self._close(batch)
        try:
            results = list(self._send(list(batch.entries), batch.deadline()))
            if len(results) != len(batch.entries):
                raise ValueError(f"{len(results)} results for {len(batch.entries)} entries")
        except Exception as exc:  # a bug in `send`: nothing is lost, every entry is retried
            error = f"{type(exc).__name__} while sending a batch"
            results = [PublishResult(Outcome.RETRY, error)] * len(batch.entries)
        batch.results = results
        batch.done.set()

    @staticmethod
    def _joiner_wait(delivery: Delivery) -> float:
        if delivery.deadline is None:
            return _UNBOUNDED_WAIT_SECONDS
        return max(0.0, delivery.deadline - time.monotonic()) + _GRACE_SECONDS
