"""`Settler`: settles published events as their results arrive, in group commits.

Publishing threads hand each result to the settler and go on with the next event. The
settler's thread takes everything that has arrived so far and settles it with one conditional
`BatchWrite`; while that write is in flight the next results pile up for the following one.
So a slow publish never holds back the settles of the fast ones, and under load every write
carries many settles without a timer deciding when to flush.
"""

from __future__ import annotations

import datetime
import logging
import queue
import random
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType

from app.logs import log_event
from app.relay.config import RelayConfig
from app.relay.events import OutboxEvent
from app.relay.leases import Change, LeaseStore
from app.relay.publishers import Outcome, PublishResult, error_class
from app.relay.transitions import settlement

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Lease:
    """An event this relay holds: settle it only if it is still at `change`'s update time."""

    event: OutboxEvent
    change: Change
    leased_at: float  # monotonic time just before the lease was written
    attempt: int


_STOP = None


class Settler:
    """A thread that settles `(lease, result)` pairs; `done(n)` is called after each write
    with the number of leases it settled (or lost). A Firestore error stops it and is raised
    by `close()`; leases it could not settle are taken back after the lock timeout."""

    def __init__(
        self,
        store: LeaseStore,
        config: RelayConfig,
        rng: random.Random,
        done: Callable[[int], None],
    ) -> None:
        self.tally: Counter[str] = Counter()
        self._store = store
        self._config = config
        self._rng = rng
        self._done = done
        self._queue: queue.SimpleQueue[tuple[Lease, PublishResult | None] | None] = (
            queue.SimpleQueue()
        )
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="relay-settle", daemon=True)

    def __enter__(self) -> Settler:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def put(self, lease: Lease, result: PublishResult | None) -> None:
        self._queue.put((lease, result))

    @property
    def error(self) -> BaseException | None:
        return self._error

    def close(self) -> None:
        """Settle everything handed over so far, stop, and raise the error that stopped it."""
        if self._thread.is_alive():
            self._queue.put(_STOP)
            self._thread.join()
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def _run(self) -> None:
        stopping = False
        while not stopping:
            item = self._queue.get()
            items = []
            while item is not _STOP:
                items.append(item)
                if len(items) >= self._config.batch_size:
                    break
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
            stopping = item is _STOP
            if not items:
                continue
            try:
                if self._error is None:
                    self._settle(items)
            except BaseException as exc:  # raised by close(), in the relay's own thread
                self._error = exc
            finally:
                self._done(len(items))

    def _settle(self, items: list[tuple[Lease, PublishResult | None]]) -> None:
        now = datetime.datetime.now(datetime.timezone.utc)
        changes, kinds = [], []
        for lease, result in items:
            kind, fields = settlement(lease.attempt, result, self._config, now=now, rng=self._rng)
            if result is not None and result.outcome is not Outcome.DELIVERED:
                log_event(
                    logger,
                    logging.WARNING,
                    "relay.delivery_failed",
                    f"event {lease.event.event_id} attempt {lease.attempt}: "
                    f"{result.error or result.outcome.value}, {kind}",
                    eventId=lease.event.event_id,
                    attempt=lease.attempt,
                    errorClass=error_class(result),
                    error=result.error,
                    outcome=kind,
                )
            changes.append(Change(lease.change.ref, lease.change.expected_update_time, fields))
            kinds.append(kind)
        written = self._store.write_if_unchanged(changes)
        for (lease, _), kind, update_time in zip(items, kinds, written, strict=True):
            if update_time is None:
                self.tally["lostLeases"] += 1
                log_event(
                    logger,
                    logging.WARNING,
                    "relay.lease_lost",
                    f"lost the lease on event {lease.event.event_id} before settling it as "
                    f"{kind}; left as it is",
                    eventId=lease.event.event_id,
                    attempt=lease.attempt,
                    outcome=kind,
                )
            else:
                self.tally[kind] += 1


class InFlight:
    """How many leased events are not settled yet; the relay waits on it before leasing."""

    def __init__(self) -> None:
        self._count = 0
        self._changed = threading.Condition()

    def acquire(self, count: int) -> None:
        with self._changed:
            self._count += count

    def release(self, count: int) -> None:
        with self._changed:
            self._count -= count
            self._changed.notify_all()

    def wait_below(self, limit: int, timeout: float | None = None) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: self._count < limit, timeout)
