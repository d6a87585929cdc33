"""The watchdog's incidents: one alert when a problem starts, one recovery when it ends,
whatever the number of checks (or of watchdogs) in between.

State: the document `watchdog` in `OUTBOX_HEALTH_COLLECTION`, `incidents` = code -> {message,
since, state: open | recovered, notified}. A check reads it, works out what changed, and
writes the change conditionally on the update time it read (created when absent): of two
checks that see the same change, one writes it and the other loses and sends nothing. Then
the messages not yet sent go out, and a second conditional write marks them sent (or drops a
recovery once told). A webhook that fails leaves `notified` false: the next check sends it
again; a crash between a send and its mark sends it twice, never zero times.

Timeline of one problem (checks a minute apart):
    t0 found      -> written open, not notified -> alert sent -> marked notified
    t1 still      -> nothing written, nothing sent
    t2 gone       -> written recovered, not notified -> recovery sent -> dropped
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from google.api_core import exceptions as google_exceptions
from google.cloud.firestore import SERVER_TIMESTAMP

from firestore_outbox.firestore.deadline import bounded_retry
from firestore_outbox.health.assess import Health

if TYPE_CHECKING:
    from google.cloud.firestore import Client

__all__ = ["Notices", "track"]

DOCUMENT = "watchdog"
_LOST = (
    google_exceptions.FailedPrecondition,
    google_exceptions.AlreadyExists,
    google_exceptions.NotFound,
)
# Sends one message (state: alert or recovered) about [(code, message)]; raises if not taken.
Send = Callable[[str, list[tuple[str, str]]], None]


@dataclass
class Notices:
    """What one check opened, saw recover, and sent (by code)."""

    opened: list[str] = field(default_factory=list)
    recovered: list[str] = field(default_factory=list)
    alerted: list[str] = field(default_factory=list)
    told_recovered: list[str] = field(default_factory=list)
    send_error: str | None = None


def track(db: Client, collection: str, health: Health, send: Send, *, timeout: float) -> Notices:
    """Record `health` against the open incidents and send what is due (see the module)."""
    ref = db.collection(collection).document(DOCUMENT)
    options: dict[str, Any] = {"timeout": timeout, "retry": bounded_retry(timeout)}
    snapshot = ref.get(**options)
    before: dict[str, dict[str, Any]] = dict((snapshot.to_dict() or {}).get("incidents") or {})
    now = {p.code.value: p.message for p in health.problems}
    after, notices = _next(before, now)
    seen = snapshot.update_time
    if after != before:
        try:
            seen = _write(db, ref, snapshot.exists, seen, after, options)
        except _LOST:  # another check recorded the change and sends its messages
            return Notices()
    due = {c: r for c, r in after.items() if not r.get("notified")}
    if not due:
        return notices
    sent: dict[str, dict[str, Any]] = {}
    for state, told in (("alert", notices.alerted), ("recovered", notices.told_recovered)):
        codes = sorted(c for c, r in due.items() if (r["state"] == "open") == (state == "alert"))
        if not codes:
            continue
        try:
            send(state, [(c, str(due[c].get("message"))) for c in codes])
        except Exception as exc:  # the next check sends it again
            notices.send_error = str(exc)
            continue
        told += codes
        sent.update({c: due[c] for c in codes})
    if sent:
        marked = {
            c: ({**r, "notified": True} if c in sent else r)
            for c, r in after.items()
            if not (c in sent and r["state"] == "recovered")
        }
        with contextlib.suppress(*_LOST):  # another check wrote: it may send these again
            _write(db, ref, True, seen, marked, options)
    return notices


def _next(
    before: Mapping[str, dict[str, Any]], now: Mapping[str, str]
) -> tuple[dict[str, dict[str, Any]], Notices]:
    notices = Notices()
    after: dict[str, dict[str, Any]] = {}
    for code, record in before.items():
        if code in now and record.get("state") == "open":
            after[code] = record
        elif code in now:  # back before its recovery was told: open again, already alerted
            after[code] = {**record, "state": "open", "notified": True}
        elif record.get("state") == "open" and record.get("notified"):
            after[code] = {**record, "state": "recovered", "notified": False}
            notices.recovered.append(code)
        elif record.get("state") == "recovered" and not record.get("notified"):
            after[code] = record
    for code, text in now.items():
        if code not in after:
            after[code] = {
                "message": text,
                "since": SERVER_TIMESTAMP,
                "state": "open",
                "notified": False,
            }
            notices.opened.append(code)
    return after, notices


def _write(
    db: Client,
    ref: Any,
    exists: bool,
    seen: Any,
    incidents: dict[str, dict[str, Any]],
    options: dict[str, Any],
) -> Any:
    data = {"incidents": incidents, "updatedAt": SERVER_TIMESTAMP}
    if exists:
        option = db.write_option(last_update_time=seen)
        return ref.update(data, option=option, **options).update_time
    return ref.create(data, **options).update_time
