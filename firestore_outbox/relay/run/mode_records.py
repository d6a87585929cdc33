"""Lease-mode records: relays of the two lease modes never drain the same events at once.

Partition leases (`RELAY_LEASES=partition`) and per-event leases (`event`) lease the same
documents differently: a partition holder delivers `PENDING` events without writing them
first, a per-event relay leases an event by writing it `PROCESSING`. Side by side (a rolling
deploy, a rollback) each would deliver what the other is delivering. So a relay with work
first writes a record of its own in `{RELAY_PARTITION_COLLECTION}_mode` (id: the relay's):

    {mode, since: its commit time, until: now + budget + lock timeout + KEEP_SECONDS}

then reads the live records (`until` ahead on Firestore's clock). If one of the other mode
was written before its own (`since`, then id), it deletes its record and drains nothing: the
summary says `stoppedBy: "mode"`, `waitingFor` and `modeUntil`. Of two relays that wrote at
once, the later one waits, whichever reads first.

A warm relay keeps its record: each run must be covered until its budget and every lease it
may take have run out (`until` >= its start + budget + lock timeout), and a run that finds it
covered makes no call for it (a nudged run then publishes after one round trip). One that is
not covered moves `until` on, `since` kept, and trusts the move only if it landed while the
record was still live (so that nobody saw it gone in between); else it writes a new record
(an id of its own: a run under way may rely on the old one) and reads the live ones again.
`close()` deletes the record when every run was clean (left no lease behind), else it lapses
by itself. The price: a relay of the other mode waits until a
warm relay's record lapses, at most budget + lock timeout + KEEP_SECONDS after its last run,
where a record per run, deleted at its end, let it start at once.

Cold nudged invocations (a Function Compute instance started for a burst of nudges, perhaps
never invoked again, never closed) must not pile records up, each live for budget + lock
timeout + KEEP_SECONDS and then left in the collection for ever. So:

- lifetime: a nudged run that wrote its relay's record new (a cold instance's first run) and
  ends clean, with no other run of its relay under way, moves the record's `until` back to
  KEEP_SECONDS from now (`leave(shorten=True)`): an instance never invoked again leaves a
  record that lapses KEEP_SECONDS after its run, not budget + lock timeout + KEEP_SECONDS;
  one nudged again moves it on once, with one write beside its claim (`_move_on`), and is
  a warm relay from then on (its record kept, its runs making no call for it);
- number: a relay that wrote a new record deletes up to SWEEP_LIMIT lapsed records (any
  relay's: surely lapsed on Firestore's clock, each delete conditional on the update time it
  read) when its run ends, off the path to the first publish. Every record left behind was
  written new once, so the lapsed records never outnumber the sweeps.
"""

from __future__ import annotations

import datetime
import logging
import threading
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from google.api_core import exceptions as google_exceptions
from google.cloud.firestore import SERVER_TIMESTAMP, FieldFilter

from firestore_outbox.firestore.cas import Change
from firestore_outbox.firestore.clock import ClockNotSet

if TYPE_CHECKING:
    from google.cloud.firestore import Client

    from firestore_outbox.relay.partition_settings import LeaseMode
    from firestore_outbox.relay.store import LeaseStore

logger = logging.getLogger("firestore_outbox.relay")

# How much longer than a run needs a record is taken for: a warm relay moves it on about
# once in this time (a round trip on that run's way to its first publish).
KEEP_SECONDS = 60.0
# Lapsed records a relay that wrote a new one deletes when its run ends.
SWEEP_LIMIT = 20


@dataclass(frozen=True)
class ModeTaken:
    """`waiting_for`: the other mode, live until `until`; None: this run may drain."""

    waiting_for: str | None
    until: datetime.datetime | None = None


@dataclass(frozen=True)
class _Record:
    """This relay's record as last written: its update time and `until`."""

    update_time: datetime.datetime
    until: datetime.datetime


class ModeRecords:
    """One relay's record among a deployment's, in the collection `collection`
    (`OutboxCollections.partition_modes`)."""

    def __init__(self, db: Client, store: LeaseStore, collection: str) -> None:
        self._db = db
        self._store = store
        self._collection = db.collection(collection)
        self._ref = self._collection.document(uuid.uuid4().hex)
        self._lock = threading.Lock()
        self._record: _Record | None = None
        self._running = 0  # runs that took the record and have not left
        self._unclean = False  # a run left leases behind: the record must lapse by itself
        self._sweep = False  # a new record was written: lapsed ones are swept at a run's end
        self._new = False  # ... and not yet shortened (`leave(shorten=True)`)

    def take(self, mode: LeaseMode, seconds: float) -> ModeTaken:
        """Let a run of `mode` drain for `seconds` (its budget and lease), unless a relay
        of the other mode recorded first and may still hold leases. A run that may drain
        calls `leave` when it ends."""
        with self._lock:
            try:
                now = self._store.clock.latest()
            except ClockNotSet:  # a per-event run's first Firestore call: one read more
                self._store.run(self._collection.limit(1))
                now = self._store.clock.latest()
            need = now + datetime.timedelta(seconds=seconds)
            record = self._record
            if record is None or record.until < need:
                until = need + datetime.timedelta(seconds=KEEP_SECONDS)
                taken = self._move_on(record, until, now) or self._write(mode, until)
                if isinstance(taken, ModeTaken):
                    self._record = None
                    return taken
                self._record = record = taken
            self._running += 1
            return ModeTaken(None, record.until)

    def leave(self, *, clean: bool, shorten: bool = False) -> None:
        """A run that `take` let drain ended; `clean`: it holds no lease. `shorten` (a
        nudged run): the record, if written new for this run, no run is under way and none
        left a lease, is kept only KEEP_SECONDS more (see the module). Then lapsed records
        are swept, if this relay wrote a new one since the last sweep. Never raises."""
        with self._lock:
            self._running -= 1
            self._unclean |= not clean
            try:
                if shorten and self._new and not self._running and not self._unclean:
                    self._shorten()
                self._new = False
                if self._sweep:
                    self._sweep = False
                    self._sweep_lapsed()
            except (google_exceptions.GoogleAPIError, ClockNotSet) as exc:
                logger.warning("lease-mode records not tidied: %s", type(exc).__name__)

    def _shorten(self) -> None:
        """Move this relay's record's `until` back to KEEP_SECONDS from now (no run of
        this relay holds a lease: nothing of it needs covering longer)."""
        record = self._record
        until = self._store.clock.latest() + datetime.timedelta(seconds=KEEP_SECONDS)
        if record is None or record.until <= until:
            return
        (written,) = self._store.write([Change(self._ref, record.update_time, {"until": until})])
        landed = written.update_time if written.applied else None
        self._record = None if landed is None else _Record(landed, until)

    def _sweep_lapsed(self) -> None:
        """Delete up to SWEEP_LIMIT records lapsed on Firestore's clock (any relay's): each
        only if unchanged since read, so a record moved on meanwhile stays."""
        lapsed = self._store.run(
            self._collection.where(
                filter=FieldFilter("until", "<", self._store.clock.earliest())
            ).limit(SWEEP_LIMIT)
        )
        if lapsed:
            self._store.write([Change(d.reference, d.update_time, None) for d in lapsed])

    def close(self) -> None:
        """Delete the record if no run is under way and none left a lease behind."""
        with self._lock:
            record = self._record
            if record is None or self._running or self._unclean:
                return
            self._record = None
        try:  # a record left behind lapses by itself
            self._store.write([Change(self._ref, record.update_time, None)])
        except google_exceptions.GoogleAPIError as exc:
            logger.warning("lease-mode record not deleted: %s", type(exc).__name__)

    def _move_on(
        self, record: _Record | None, until: datetime.datetime, now: datetime.datetime
    ) -> _Record | None:
        """Move a live record's `until` on, `since` kept; None when it may have lapsed (or
        was changed) before the move landed: a record must then be written anew."""
        if record is None or record.until <= now:
            return None
        (written,) = self._store.write([Change(self._ref, record.update_time, {"until": until})])
        landed = written.update_time if written.applied else None
        if landed is not None and landed < record.until:  # live throughout: still first
            return _Record(landed, until)
        return None

    def _write(self, mode: LeaseMode, until: datetime.datetime) -> _Record | ModeTaken:
        """Write a new record and read the live ones; the other mode's, and no record of
        this relay, when one of them came first. The new record has an id of its own: the
        old one, if it may still be live, is left to lapse, since a run under way may rely
        on it as it is (its `since` kept: a relay of the other mode that recorded after it
        waits); one surely lapsed is deleted in the same commit."""
        last = self._record
        lapsed = last is not None and last.until < self._store.clock.earliest()
        ref = self._collection.document(uuid.uuid4().hex)
        record = {"mode": mode.value, "since": SERVER_TIMESTAMP, "until": until}
        batch = self._db.batch()
        batch.set(ref, record)
        if lapsed:
            batch.delete(self._ref)
        update_time = batch.commit(timeout=self._store.timeout)[0].update_time
        self._ref = ref
        self._sweep = self._new = True
        ours = (update_time, self._ref.id)
        live = self._store.run(
            self._collection.where(filter=FieldFilter("until", ">", self._store.clock.earliest()))
        )
        first = [
            d
            for d in live
            if d.get("mode") != mode.value and (d.get("since"), d.reference.id) < ours
        ]
        if not first:
            return _Record(update_time, until)
        self._ref.delete(timeout=self._store.timeout)
        return ModeTaken(str(first[0].get("mode")), max(d.get("until") for d in first))
