"""What `outbox replay` and `outbox status` print of re-drive jobs and of a dry run."""

from __future__ import annotations

import sys
from typing import IO, Any

from firestore_outbox.cli.output import print_json, print_table
from firestore_outbox.redrive.selection import Selection
from firestore_outbox.redrive.service import Redrive
from firestore_outbox.redrive.targets import describe


def print_preview(
    redrive: Redrive,
    selection: Selection,
    target: Any,
    rate: float,
    *,
    as_json: bool,
    out: IO[str] | None = None,
) -> None:
    """The dry run: one JSON document, or lines on `out` (default stdout)."""
    found = redrive.preview(selection)
    if as_json:
        print_json(
            {
                "dryRun": True,
                "count": found.count,
                "perType": dict(found.per_type),
                "first": found.first and found.first.event_id,
                "last": found.last and found.last.event_id,
                "writtenUnderOtherPartitions": found.elsewhere,
            }
        )
        return
    out = out or sys.stdout
    print(f"{found.count} events to send to {describe(target)} ({selection.describe()})", file=out)
    for label, event in (("first", found.first), ("last", found.last)):
        if event is not None:
            when = event.created_at.isoformat()
            print(f"  {label}: {event.event_id} {event.event_type} {when}", file=out)
    if found.per_type:
        rows = sorted(found.per_type.items(), key=lambda x: x[0])
        print_table(("events", "eventType"), rows, out=out)
    if found.elsewhere:
        print(
            f"{found.elsewhere} of them were written under another RELAY_PARTITIONS (stored "
            "in another partition than today's count gives): selected all the same",
            file=out,
        )
    if found.count:
        print(f"at {rate:g}/s: about {found.count / rate:.0f} s", file=out)
    else:
        print("nothing selected: a job of this selection is refused", file=out)


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
