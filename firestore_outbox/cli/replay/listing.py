"""What `outbox replay` and `outbox status` print of re-drive jobs and of a dry run."""

from __future__ import annotations

from typing import Any

from firestore_outbox.cli.output import print_json, print_table
from firestore_outbox.redrive.selection import Selection
from firestore_outbox.redrive.service import Redrive
from firestore_outbox.redrive.targets import describe


def print_preview(redrive: Redrive, selection: Selection, target: Any, args: Any) -> None:
    found = redrive.preview(selection)
    if args.json:
        print_json(
            {
                "count": found.count,
                "perType": dict(found.per_type),
                "first": found.first and found.first.event_id,
                "last": found.last and found.last.event_id,
            }
        )
        return
    print(f"{found.count} events to send to {describe(target)} ({selection.describe()})")
    for label, event in (("first", found.first), ("last", found.last)):
        if event is not None:
            print(f"  {label}: {event.event_id} {event.event_type} {event.created_at.isoformat()}")
    if found.per_type:
        print_table(("events", "eventType"), sorted(found.per_type.items(), key=lambda x: x[0]))
    if found.count:
        print(f"at {args.rate:g}/s: about {found.count / args.rate:.0f} s")


JOB_COLUMNS = ("job", "state", "sent", "target", "by", "filter")


def job_rows(jobs: list[Any]) -> list[tuple[str, ...]]:
    """A table row per job (`outbox replay --list` and `outbox status`)."""
    return [
        (
            job.job_id,
            job.state.value,
            f"{job.counts['sent']}/{job.counts['selected']}",
            describe(job.target),
            job.created_by,
            job.selection.describe(),
        )
        for job in jobs
    ]


def jobs_json(jobs: list[Any]) -> list[dict[str, str]]:
    return [dict(zip(JOB_COLUMNS, row, strict=True)) for row in job_rows(jobs)]


def print_jobs(jobs: list[Any], as_json: bool) -> None:
    if as_json:
        print_json(jobs_json(jobs))
    elif jobs:
        print_table(JOB_COLUMNS, job_rows(jobs))
    else:
        print("no re-drive jobs")
