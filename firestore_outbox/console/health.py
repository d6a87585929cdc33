"""The overview's health panel, first on the page: the watchdog's judgement (`assess`, the
same problems in the same words an alert carries), when the relay last ran and how that run
ended, the partitions summarised, and the re-drive jobs under way."""

from __future__ import annotations

import datetime
from collections import Counter

from firestore_outbox.console.html import Html
from firestore_outbox.health.assess import Health
from firestore_outbox.health.reading import HealthReading
from firestore_outbox.numbers import human
from firestore_outbox.ops.held import HeldAggregate
from firestore_outbox.partitions import partition_of
from firestore_outbox.redrive.job import Job


def health_panel(h: Html, health: Health, reading: HealthReading, jobs: list[Job]) -> str:
    """The panel: `ok` or `alert` as its class, each problem a list item."""
    if health.ok:
        verdict = "<p class=verdict><strong>Healthy</strong>: the relay runs, nothing stalls.</p>"
    else:
        items = "".join(
            f"<li data-problem={h.text(p.code.value)}><strong>{h.text(p.code.value)}</strong>: "
            f"{h.text(p.message)}</li>"
            for p in health.problems
        )
        verdict = f"<ul class=problems>{items}</ul>"
    beat = health.last_beat
    if beat is None or health.last_beat_age is None:
        last = "The relay has not recorded a run yet."
    else:
        counts = ", ".join(f"{n} {k}" for k, n in sorted(beat.counts.items()))
        ended = f"{beat.status}, stopped by {beat.stopped_by}"
        last = f"The relay last ran {human(health.last_beat_age)} ago ({ended}; {counts})."
    kind = "ok" if health.ok else "alert"
    return (
        f"<section id=health class={kind}>{verdict}<p id=last-run>{h.text(last)}</p>"
        f"{redrive_jobs(h, jobs)}</section>"
    )


def redrive_jobs(h: Html, jobs: list[Job]) -> str:
    """The re-drive jobs under way (not done or cancelled), each with its progress."""
    if not jobs:
        return "<p id=redrive-jobs class=note>No re-drive job under way.</p>"
    each = ", ".join(
        f"{h.link('/jobs', job.job_id)} {h.text(job.state.value)} "
        f"{job.counts.get('sent', 0)}/{job.counts.get('selected', 0)}"
        for job in jobs
    )
    return f"<p id=redrive-jobs>Re-drive jobs under way: {each}.</p>"


def partitions_summary(
    h: Html, reading: HealthReading, held: list[HeldAggregate], count: int
) -> str:
    """The partitions by state instead of one row each: busy (a relay holds a live lease on
    it), stale (a lease past its expiry, never released: its relay died), held (a FAILED event
    holds an aggregate in it), the rest idle; and who holds the busy ones."""
    now = reading.now
    busy = {p.partition for p in reading.partitions if p.expires is not None and p.expires >= now}
    stale = {p.partition for p in reading.partitions if p.expires is not None and p.expires < now}
    holding = {str(partition_of(a.aggregate_id, count)) for a in held}
    idle = count - len(busy | stale | holding)
    holders = Counter(p.holder or "?" for p in reading.partitions if p.partition in busy)
    states = (("busy", busy), ("stale", stale), ("held", holding))
    words = ", ".join(f"<strong>{len(s)}</strong> {name}" for name, s in states)
    by = ", ".join(f"{h.text(holder)} ({n})" for holder, n in holders.most_common(5))
    drained = [p.drained for p in reading.partitions if p.drained is not None]
    last = max(drained, default=None)
    ago = "" if last is None else f"; one last drained {h.text(human(_seconds(now - last)))} ago"
    held_by = f" (busy: {by})" if by else ""
    return f"<p id=partitions>{count} partitions: {words}{held_by}, {idle} idle{ago}.</p>"


def _seconds(delta: datetime.timedelta) -> float:
    return max(0.0, delta.total_seconds())
