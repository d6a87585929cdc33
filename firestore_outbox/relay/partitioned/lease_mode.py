"""Lease-mode records: relays of the two lease modes never drain the same events at once.

Partition leases (`RELAY_LEASES=partition`) and per-event leases (`event`) lease the same
documents differently: a partition holder delivers `PENDING` events without writing them
first, a per-event relay leases an event by writing it `PROCESSING`. Side by side (a rolling
deploy, a rollback) each would deliver what the other is delivering. So a run with work first
writes a record of its own in `{RELAY_PARTITION_COLLECTION}_mode` (id = the run's instance):

    {mode, since: its commit time, until: since + budget + lock timeout}

then reads the live records (`until` ahead on Firestore's clock). If one of the other mode
was written before its own (`since`, then id), it deletes its record and drains nothing: the
summary says `stoppedBy: "mode"`, `waitingFor` and `modeUntil`. Of two runs that wrote at
once, the later one waits, whichever reads first. A run's `until` outlives every lease it may
hold (claimed or renewed before its budget ends, each good for at most the lock timeout); at
its end the run deletes its record when it left no lease behind, else moves `until` to now +
lock timeout. No record is written twice at once: runs never contend. The cost: two writes
and a query (the live records) per run that has work.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import TYPE_CHECKING

from google.cloud.firestore import SERVER_TIMESTAMP, FieldFilter

from firestore_outbox.firestore.clock import ClockNotSet

if TYPE_CHECKING:
    from google.cloud.firestore import Client

    from firestore_outbox.relay.partitioned.settings import LeaseMode
    from firestore_outbox.relay.store import LeaseStore


@dataclass(frozen=True)
class ModeTaken:
    """`waiting_for`: the other mode, live until `until`; None: this run may drain."""

    waiting_for: str | None
    until: datetime.datetime | None = None


class ModeRecords:
    """The records of one deployment's relays (`partition_collection` names them)."""

    def __init__(self, db: Client, store: LeaseStore, partition_collection: str) -> None:
        self._store = store
        self._collection = db.collection(f"{partition_collection}_mode")

    def take(self, mode: LeaseMode, instance: str, seconds: float) -> ModeTaken:
        """Record run `instance` of `mode` for `seconds`, unless a run of the other mode
        came first and may still hold leases."""
        ref, timeout = self._collection.document(instance), self._store.timeout
        try:
            now = self._store.clock.latest()
        except ClockNotSet:  # a per-event run's first Firestore call: one read more
            self._store.run(self._collection.limit(1))
            now = self._store.clock.latest()
        until = now + datetime.timedelta(seconds=seconds)
        record = {"mode": mode.value, "since": SERVER_TIMESTAMP, "until": until}
        ours = (ref.set(record, timeout=timeout).update_time, instance)
        live = self._store.run(
            self._collection.where(filter=FieldFilter("until", ">", self._store.clock.earliest()))
        )
        first = [
            d
            for d in live
            if d.get("mode") != mode.value and (d.get("since"), d.reference.id) < ours
        ]
        if not first:
            return ModeTaken(None, until)
        ref.delete(timeout=timeout)
        return ModeTaken(str(first[0].get("mode")), max(d.get("until") for d in first))

    def leave(self, instance: str, seconds: float) -> None:
        """Run `instance` ended; what it leased lasts `seconds` more (0: nothing)."""
        ref = self._collection.document(instance)
        if seconds <= 0:
            ref.delete(timeout=self._store.timeout)
            return
        until = self._store.clock.latest() + datetime.timedelta(seconds=seconds)
        ref.update({"until": until}, timeout=self._store.timeout)
