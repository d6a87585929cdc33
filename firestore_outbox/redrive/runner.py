"""`run_job`: send a job's events, in order, at its rate, under its lease, until done, out of
time, paused or cancelled.

One runner sends one event at a time, partition after partition, each partition's events in
delivery order: every aggregate's events go in commit order, with their own ids, signed as
the relay signs (the job's publisher is built with the relay's options) and marked as a
replay (`Delivery.replay`, the signed `outboxreplay` attribute). The job touches no outbox
document and no partition lease: the live relay's order and leases are not disturbed.

Progress (cursor and counts) is written at most once per `flush_seconds` (one document
takes about one sustained write a second) and when the run ends; each write is conditional
(`JobStore.record`), so a pause or cancel is seen at the next one, or within a second by a
runner waiting for its pace (`pacing.Watch`). After a crash the next
runner starts from the last cursor written: the events sent since are sent again (at least
once, never skipped). An answer to retry later (a 5xx, a timeout) or a broken channel ends
the run there, the event not passed: the next run sends it again first. A rejected event
(a 4xx that will never be accepted) is counted, its error kept, and passed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from google.cloud.firestore import SERVER_TIMESTAMP

from firestore_outbox.publishers.base import Delivery, Outcome, Publisher, bounded_error
from firestore_outbox.redrive.job import JobState
from firestore_outbox.redrive.pacing import Pacer, Watch
from firestore_outbox.redrive.reading import candidates
from firestore_outbox.relay.events import rfc3339

if TYPE_CHECKING:
    from google.cloud.firestore import CollectionReference

    from firestore_outbox.redrive.jobs import JobLease, JobStore
    from firestore_outbox.redrive.reading import Position

FLUSH_SECONDS = 1.0
RENEW_MARGIN = 0.1  # seconds: a lease renewed for a slow pace covers its send by this
MAX_SENT_IDS = 10_000  # a report names the first ones sent: a long job's run stays small


@dataclass
class RunReport:
    """What one run of a job did: `stopped` says why it ended (`done`, `budget`, `paused`,
    `cancelled`, `lost` (another runner took the job), `retry`, `channel`) or, when it did not
    start, why not; `sent_ids` the first `MAX_SENT_IDS` events sent, in order."""

    job_id: str
    started: bool
    stopped: str
    sent: int = 0
    rejected: int = 0
    skipped: int = 0
    sent_ids: list[str] = field(default_factory=list, repr=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "job": self.job_id,
            "started": self.started,
            "stopped": self.stopped,
            "sent": self.sent,
            "rejected": self.rejected,
            "skipped": self.skipped,
        }


def run_job(
    jobs: JobStore,
    events: CollectionReference,
    job_id: str,
    *,
    owner: str,
    source: str,
    publisher_for: Callable[[dict[str, Any]], Publisher],
    attempt_seconds: float,
    budget_seconds: float | None = None,
    flush_seconds: float = FLUSH_SECONDS,
) -> RunReport:
    """Run job `job_id` as `owner` for at most `budget_seconds` (None: until it ends)."""
    started = time.monotonic()
    lease = jobs.take(job_id, owner)
    if isinstance(lease, str):
        return RunReport(job_id, False, lease)
    job = lease.job
    stop_at = float("inf") if budget_seconds is None else started + budget_seconds
    publisher = publisher_for(job.target)
    report = RunReport(job_id, True, "done")
    counts = dict(job.counts)
    cursor: Position | None = job.cursor
    last_error: str | None = None
    flushed = time.monotonic()
    pacer = Pacer(job.rate)
    watch = Watch(jobs, lease)

    def progress() -> dict[str, Any]:
        fields: dict[str, Any] = {
            "cursor": cursor.to_document() if cursor else None,
            "counts": counts,
        }
        if last_error is not None:
            fields["lastError"] = last_error
        return fields

    try:
        for candidate in candidates(events, job.selection, job.cursor, timeout=jobs.timeout):
            event = candidate.event
            if event is not None:
                # The send must be over before the lease (or the budget) is: a runner that
                # takes the job over after the lease never overlaps it.
                if pacer.due() + attempt_seconds > time.monotonic() + lease.valid_for():
                    # A slow pace outwaits the lease: renew it (with the progress) when a
                    # fresh lease covers the next send, not before.
                    wake = pacer.due() + attempt_seconds - lease.lease_seconds + RENEW_MARGIN
                    if wake > stop_at:
                        report.stopped = "budget"
                        break
                    if not watch.sleep_until(wake):
                        return _stopped(jobs, lease, progress(), report)
                    flushed = time.monotonic()
                    if not jobs.record(lease, progress()):
                        report.stopped = _why_stopped(jobs, lease)
                        return report
                now = time.monotonic()
                deadline = min(stop_at, now + lease.valid_for())
                if max(now, pacer.due()) > deadline - attempt_seconds:
                    report.stopped = "budget"
                    break
                if not watch.sleep_until(pacer.due()):
                    return _stopped(jobs, lease, progress(), report)
                pacer.sent += 1
                delivery = Delivery(
                    event_id=event.event_id,
                    event_type=event.event_type,
                    source=source,
                    subject=event.aggregate_id,
                    time=rfc3339(event.created_at),
                    body=event.body,
                    attempt=1,
                    deadline=deadline,
                    traceparent=event.traceparent,
                    tracestate=event.tracestate,
                    replay=job_id,
                )
                result = publisher.publish(delivery)
                if result.outcome is Outcome.DELIVERED:
                    counts["sent"] += 1
                    report.sent += 1
                    if len(report.sent_ids) < MAX_SENT_IDS:
                        report.sent_ids.append(event.event_id)
                elif result.outcome is Outcome.REJECTED:
                    counts["rejected"] += 1
                    report.rejected += 1
                    last_error = bounded_error(f"{event.event_id}: {result.error}")
                else:  # retried by the next run, from this event
                    last_error = bounded_error(f"{event.event_id}: {result.error}")
                    report.stopped = result.outcome.value
                    break
            elif candidate.problem is not None:
                counts["skipped"] += 1
                report.skipped += 1
                last_error = bounded_error(f"{candidate.position.event_id}: {candidate.problem}")
            cursor = candidate.position
            if time.monotonic() - flushed >= flush_seconds:
                flushed = time.monotonic()
                if not jobs.record(lease, progress()):
                    report.stopped = _why_stopped(jobs, lease)
                    return report
        else:
            jobs.record(
                lease,
                {**progress(), "state": JobState.DONE.value, "finishedAt": SERVER_TIMESTAMP},
                release=True,
            )
            return report
        jobs.record(lease, progress(), release=True)
        return report
    finally:
        close = getattr(publisher, "close", None)
        if close is not None:
            close()


def _stopped(
    jobs: JobStore, lease: JobLease, progress: dict[str, Any], report: RunReport
) -> RunReport:
    """The run seen stopped while it waited: its progress recorded, the lease given back."""
    jobs.record(lease, progress, release=True)
    report.stopped = _why_stopped(jobs, lease)
    return report


def _why_stopped(jobs: JobStore, lease: JobLease) -> str:
    job = jobs.get(lease.job.job_id)
    if job.lease_owner not in (None, lease.owner):
        return "lost"
    return job.state.value.lower()
