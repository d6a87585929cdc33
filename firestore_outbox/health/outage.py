"""Firestore's own incident, `firestore_unreachable`: kept in the process while Firestore is
down, recorded in Firestore once it is back.

With Firestore gone there is nowhere to keep incidents, so the process keeps this one
(`OutageMemory`, one per watched outbox, shared by every `Watchdog` the process builds: the
Function Compute handler builds one per invocation, and a warm instance remembers between
them). When a check reads Firestore again, the process that alerted claims the recovery in the
incidents document (`claim_recovery`: `firestoreOutage.recoveredAt`, written conditionally on
the update time read) and sends it; a process that alerted on the same outage (a cold start,
a second instance) finds the recovery recorded after its alert and sends nothing.

What holds, one-minute timer checks:
    warm instance     -> one alert for the outage, one recovery when it ends
    a cold start (or a second instance) during the outage
                      -> one alert more (its first check cannot read what was sent), and no
                         second recovery: the first to read Firestore again tells it
    every instance that alerted replaced before Firestore is back
                      -> the alert gets no recovery message (nothing that survives a cold
                         start remembers it); the next check is healthy and says so in its log
Clocks: an alert's time and `recoveredAt` are the watchdog instances' wall clocks.
"""

from __future__ import annotations

import datetime
import threading
from collections.abc import Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from google.api_core import exceptions as google_exceptions

from firestore_outbox.firestore.deadline import bounded_retry

if TYPE_CHECKING:
    from google.cloud.firestore import Client

__all__ = ["OutageMemory", "claim_recovery", "outage_memory"]

FIELD = "firestoreOutage"


@dataclass
class _State:
    alerted_at: datetime.datetime | None = None  # first check that found Firestore down
    alert_told: bool = False
    recovery_claimed: bool = False


class OutageMemory:
    """One process's memory of a Firestore outage (thread-safe: an instance may run checks
    side by side)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state = _State()

    def down(self) -> tuple[bool, bool]:
        """A check found Firestore down: (first in this outage, its alert still to send)."""
        with self._lock:
            state = self._state
            first = state.alerted_at is None
            if first:
                state.alerted_at = datetime.datetime.now(datetime.timezone.utc)
            return first, not state.alert_told

    def told(self) -> None:
        """The alert went out."""
        with self._lock:
            self._state.alert_told = True

    def outage(self) -> tuple[datetime.datetime, bool] | None:
        """The outage remembered: (when it was first found, its recovery claimed), or None."""
        with self._lock:
            state = self._state
            if state.alerted_at is None:
                return None
            return state.alerted_at, state.recovery_claimed

    def claimed(self) -> None:
        with self._lock:
            self._state.recovery_claimed = True

    def forget(self) -> None:
        """The outage is over and its recovery told (here or by another process)."""
        with self._lock:
            self._state = _State()


_MEMORIES: dict[Hashable, OutageMemory] = {}
_MEMORIES_LOCK = threading.Lock()


def outage_memory(key: Hashable) -> OutageMemory:
    """The process's memory for the outbox `key` names (the same object every call)."""
    with _MEMORIES_LOCK:
        return _MEMORIES.setdefault(key, OutageMemory())


def claim_recovery(
    db: Client, collection: str, document: str, alerted_at: datetime.datetime, *, timeout: float
) -> bool:
    """Record that the outage first found at `alerted_at` is over; False when another process
    recorded it already (a recovery after `alerted_at`): that one tells it."""
    ref = db.collection(collection).document(document)
    options: dict[str, Any] = {"timeout": timeout, "retry": bounded_retry(timeout)}
    for _ in range(5):
        snapshot = ref.get(**options)
        recorded = (snapshot.to_dict() or {}).get(FIELD) or {}
        recovered_at = recorded.get("recoveredAt")
        if recovered_at is not None and recovered_at >= alerted_at:
            return False
        now = datetime.datetime.now(datetime.timezone.utc)
        outage = {FIELD: {"alertedAt": alerted_at, "recoveredAt": now}}
        try:
            if snapshot.exists:
                option = db.write_option(last_update_time=snapshot.update_time)
                ref.update(outage, option=option, **options)
            else:
                ref.create(outage, **options)
        except (google_exceptions.FailedPrecondition, google_exceptions.AlreadyExists):
            continue  # another check wrote meanwhile: read again
        return True
    return False
