"""`Settler`: settles published events as their results arrive, in group commits.

Publishing threads hand each result to the settler and go on with the next event. The
settler's thread takes everything that has arrived so far and settles it with one conditional
`BatchWrite`; while that write is in flight the next results pile up for the following one.
So a slow publish never holds back the settles of the fast ones, and under load every write
carries many settles without a timer deciding when to flush.

Each event is settled by its own outcome: a write Firestore refuses parks only its event, and
transient failures (of the whole call or of single writes) are retried with backoff until the
run's deadline, so one hiccup does not leave every delivered event PROCESSING to be delivered
again after the lock timeout. A settle sent again (by the client's retry layer or by the
settler) after its first send had landed comes back as a lost race against itself: only those
uncertain ones are read back, in one batched get, and the settles found as this relay wrote
them count as settled, not as lost leases.
"""

from __future__ import annotations

import itertools
import logging
import math
import queue
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType

from app.cas import Change, WriteOutcome, Written
from app.logs import log_event
from app.relay.config import RelayConfig
from app.relay.events import OutboxEvent
from app.relay.leases import LeaseStore
from app.relay.outcomes import TRANSIENT_ERRORS, backoff_pause, count_refused
from app.relay.publishers import Outcome, PublishResult, error_class
from app.relay.ramp import RampGovernor, bucket, pace
from app.relay.transitions import one_write_settlement, settlement

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Lease:
    """An event this relay holds: settle it only if it is still at `change`'s update time."""

    event: OutboxEvent
    change: Change
    leased_at: float  # monotonic time just before the lease was written
    attempt: int
    # Read under a partition lease (`app.relay.drain`): no lease write came before, so the
    # settle is the event's one write, and an event never sent needs no write at all.
    one_write: bool = False


# Told how each lease ended: its kind ("processed", "retried", ...) and the write's outcome
# (None when nothing was written or it could not be settled in time).
OnSettled = Callable[[Lease, str, "Written | None"], None]


_STOP = None


class Settler:
    """A thread that settles `(lease, result)` pairs; `done(n)` is called after each write
    with the number of leases it settled (or lost). Transient failures are retried until
    `deadline` (monotonic; with none, for one lock timeout); a lasting Firestore error stops
    it and is raised by `close()`. Leases it could not settle are taken back after the lock
    timeout. `instance` is the relay's `processingInstanceId`, which names its settles;
    `ramp` (if any) paces its writes (`app.relay.ramp`)."""

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
        self.tally: Counter[str] = Counter()
        self._on_settled = on_settled
        self._instance = instance
        self._deadline = deadline
        self._late: Exception | None = None
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
            except BaseException as exc:  # raised by close(), in the relay's own thread
                self._error = exc
            finally:
                self._done(len(items))

    def _settle(self, items: list[tuple[Lease, PublishResult | None]]) -> None:
        # Firestore's time, never early: a retry's nextAttemptAt and expireAt count from it.
        now = self._store.clock.latest()
        unsent = [lease for lease, result in items if lease.one_write and result is None]
        items = [
            (lease, result) for lease, result in items if not (lease.one_write and result is None)
        ]
        for lease in unsent:  # never sent and never leased by a write: nothing to undo
            self.tally["released"] += 1
            self._told(lease, "released", None)
        changes, kinds = [], []
        for lease, result in items:
            if lease.one_write:
                kind, fields = one_write_settlement(
                    lease.attempt,
                    result,
                    self._config,
                    instance=self._instance,
                    now=now,
                    rng=self._rng,
                )
            else:
                kind, fields = settlement(
                    lease.attempt, result, self._config, now=now, rng=self._rng
                )
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
        self._late = None
        for (lease, _), kind, written in zip(items, kinds, self._write(changes), strict=True):
            self._count(lease, kind, written)
            self._told(lease, kind, written)
        if self._late is not None:
            raise self._late  # Firestore stayed unreachable: the run stops with an error

    def _write(self, changes: list[Change]) -> list[Written | None]:
        """Every change's outcome (None: not settled in time), retrying transient failures
        with backoff until the deadline; a lasting error is raised after counting."""
        deadline = self._deadline
        if math.isinf(deadline):
            deadline = time.monotonic() + self._config.lock_timeout_seconds
        written: list[Written | None] = [None] * len(changes)
        todo = list(range(len(changes)))
        resent: set[int] = set()  # sent before: a LOST answer may be to its own first send
        for attempt in itertools.count(1):
            if attempt > 1:
                resent.update(todo)
            error: Exception | None = None
            try:
                for n, result in zip(
                    todo, self._store.write([changes[n] for n in todo]), strict=True
                ):
                    written[n] = result
            except TRANSIENT_ERRORS as exc:
                error = exc
            todo = [n for n in todo if (w := written[n]) is None or w.transient]
            pause = backoff_pause(attempt, self._rng)
            if not todo:
                break
            if time.monotonic() + pause >= deadline:
                self._late = error  # what is left stays PROCESSING until its lease expires
                break
            self.tally["settleRetries"] += 1
            time.sleep(pause)
        return self._read_back(changes, written, resent, deadline)

    def _read_back(
        self,
        changes: list[Change],
        written: list[Written | None],
        resent: set[int],
        deadline: float,
    ) -> list[Written | None]:
        """Settles that came back LOST but may have lost only to their own first send: the
        ones found as this relay wrote them were applied (no reads when none is uncertain)."""
        doubtful = [
            n
            for n, w in enumerate(written)
            if w is not None and w.outcome is WriteOutcome.LOST and (w.uncertain or n in resent)
        ]
        if not doubtful:
            return written
        self.tally["settlesReadBack"] += len(doubtful)
        holding = {"processingInstanceId": self._instance}
        try:
            found = self._store.landed([changes[n] for n in doubtful], holding, deadline=deadline)
        except TRANSIENT_ERRORS:
            return written  # not known: they stay lost leases, as the write said
        for n, update_time in zip(doubtful, found, strict=True):
            if update_time is not None:
                written[n] = Written(WriteOutcome.APPLIED, update_time)
        return written

    def _told(self, lease: Lease, kind: str, written: Written | None) -> None:
        if self._on_settled is not None:
            self._on_settled(lease, kind, written)

    def _count(self, lease: Lease, kind: str, written: Written | None) -> None:
        event_id = lease.event.event_id
        if written is None or written.transient:
            self.tally["unsettled"] += 1
        elif written.applied:
            self.tally[kind] += 1
        elif written.outcome is WriteOutcome.LOST:
            self.tally["lostLeases"] += 1
            log_event(
                logger,
                logging.WARNING,
                "relay.lease_lost",
                f"lost the lease on event {event_id} before settling it as {kind}; left as it is",
                eventId=event_id,
                attempt=lease.attempt,
                outcome=kind,
            )
        else:
            count_refused(self.tally, event_id, lease.attempt, written, kind)
