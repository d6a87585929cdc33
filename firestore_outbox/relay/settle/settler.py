"""`Settler`: settles published events as their results arrive, in group commits.

Publishing threads hand each result to the settler and go on with the next event. The
settler's thread takes everything that has arrived so far and settles it with one conditional
`BatchWrite`; while that write is in flight the next results pile up for the following one.
So a slow publish never holds back the settles of the fast ones, and under load every write
carries many settles without a timer deciding when to flush.

Each event is settled by its own outcome: a write Firestore refuses parks only its event.
What one lease's settle writes and how it is counted is `firestore_outbox.relay.settle.change`;
how one group commit is retried until the run's deadline, its uncertain settles read back, is
`firestore_outbox.relay.settle.writes`; the leases it settles are
`firestore_outbox.relay.lease`'s.
"""

from __future__ import annotations

import math
import queue
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from types import TracebackType

from firestore_outbox.firestore.cas import Written
from firestore_outbox.publishers.base import PublishResult
from firestore_outbox.relay.config import RelayConfig

# Re-exported: `Lease` and `OnSettled` lived here, and tests import them from here.
from firestore_outbox.relay.lease import Lease as Lease
from firestore_outbox.relay.lease import OnSettled as OnSettled
from firestore_outbox.relay.lease import Settled
from firestore_outbox.relay.ramp import RampGovernor, bucket, pace
from firestore_outbox.relay.settle.change import count_settled, settle_change
from firestore_outbox.relay.settle.writes import write_settles
from firestore_outbox.relay.store import LeaseStore
from firestore_outbox.relay.summary import Count, Tally

_STOP = None
_WAKE_SECONDS = 0.1  # how often a publish waiting for settles looks whether the settler stopped


class Settler:
    """A thread that settles `(lease, result)` pairs; `done(n)` is called after each write
    with the number of leases it settled (or lost). Transient failures are retried until
    `deadline` (monotonic; with none, for one lock timeout); a lasting Firestore error stops
    it and is raised by `close()`. Leases it could not settle are taken back after the lock
    timeout. `instance` is the relay's `processingInstanceId`, which names its settles;
    `ramp` (if any) paces its writes (`firestore_outbox.relay.ramp`)."""

    def __init__(
        self,
        store: LeaseStore,
        config: RelayConfig,
        rng: random.Random,
        done: Callable[[int], None],
        *,
        instance: str,
        deadline: float = math.inf,
        on_settled: OnSettled | None = None,
        ramp: RampGovernor | None = None,
    ) -> None:
        self._ramp = ramp
        self.tally: Tally = Counter()
        self._on_settled = on_settled
        self._instance = instance
        self._deadline = deadline
        self._store = store
        self._config = config
        self._rng = rng
        self._done = done
        self._queue: queue.SimpleQueue[tuple[Lease, PublishResult | None] | None] = (
            queue.SimpleQueue()
        )
        self._error: BaseException | None = None
        # Set while settles are not landing: nothing more is published that could not be
        # settled (each such delivery would be a redelivery later).
        self._stalled = threading.Event()
        self._flowing = threading.Event()  # the opposite, to wait on
        self._flowing.set()
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
        """Hand over a publish's `result` (None: never sent) for the next group commit."""
        self._queue.put((lease, result))

    @property
    def stalled(self) -> bool:
        """Whether the last settle write failed (or the settler stopped): publish nothing."""
        return self._stalled.is_set()

    def wait_flowing(self, timeout: float) -> bool:
        """Wait at most `timeout` seconds for settles to land again; whether they do (never
        once the settler has stopped)."""
        end = time.monotonic() + timeout
        while self._error is None:
            if self._flowing.wait(max(0.0, min(_WAKE_SECONDS, end - time.monotonic()))):
                return self._error is None
            if time.monotonic() >= end:
                return False
        return False

    def _landing(self, landed: bool) -> None:
        if landed and self._error is None:
            self._stalled.clear()
            self._flowing.set()
        else:
            self._flowing.clear()
            self._stalled.set()

    @property
    def error(self) -> BaseException | None:
        """The error that stopped the settler, until `close()` raises it; None while it runs."""
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
                if len(items) >= bucket(self._ramp, self._config.batch_size):
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
                    pace(self._ramp, len(items), self._deadline)  # RELAY_RAMP=on
                    self._settle(items)
                else:
                    self._unsettled(items)
            except BaseException as exc:  # raised by close(), in the relay's own thread
                self._error = exc
                self._landing(False)
            finally:
                self._done(len(items))

    def _unsettled(self, items: list[tuple[Lease, PublishResult | None]]) -> None:
        """After the settler stopped: what was sent, or leased by a write, stays unsettled
        (delivered again later); what was neither is released."""
        for lease, result in items:
            kind = Settled.RELEASED if lease.one_write and result is None else Settled.UNSETTLED
            self.tally[kind.tallied] += 1
            self._told(lease, kind, None)

    def _settle(self, items: list[tuple[Lease, PublishResult | None]]) -> None:
        # Firestore's time, never early: a retry's nextAttemptAt and expireAt count from it.
        now = self._store.clock.latest()
        unsent = [lease for lease, result in items if lease.one_write and result is None]
        items = [
            (lease, result) for lease, result in items if not (lease.one_write and result is None)
        ]
        for lease in unsent:  # never sent and never leased by a write: nothing to undo
            self.tally[Count.RELEASED] += 1
            self._told(lease, Settled.RELEASED, None)
        changes, kinds = [], []
        for lease, result in items:
            kind, change = settle_change(
                lease, result, self._config, instance=self._instance, now=now, rng=self._rng
            )
            changes.append(change)
            kinds.append(kind)
        outcomes, late = write_settles(
            self._store,
            changes,
            deadline=self._deadline,
            lock_timeout=self._config.lock_timeout_seconds,
            instance=self._instance,
            rng=self._rng,
            tally=self.tally,
            landing=self._landing,
        )
        for (lease, _), kind, written in zip(items, kinds, outcomes, strict=True):
            count_settled(self.tally, lease, kind, written)
            self._told(lease, kind, written)
        if late is not None:
            raise late  # Firestore stayed unreachable: the run stops with an error

    def _told(self, lease: Lease, kind: Settled, written: Written | None) -> None:
        if self._on_settled is not None:
            self._on_settled(lease, kind, written)
