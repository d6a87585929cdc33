"""`outbox status`: counts per status, the lag, and failures grouped by `lastError`; and
`outbox watchdog`: one check of the relay's health from outside it, alerting as configured."""

from __future__ import annotations

import argparse
from typing import Any

from firestore_outbox.cli.output import (
    add_lock_timeout,
    human,
    lock_timeout,
    ops_client,
    print_json,
    print_table,
    read_from,
    read_from_line,
    utcnow,
)
from firestore_outbox.cli.replay.listing import JOB_COLUMNS, job_rows, jobs_json
from firestore_outbox.config.wiring import make_watchdog
from firestore_outbox.fields import EventStatus
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.ops import read_status
from firestore_outbox.redrive.jobs import JobStore


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "status",
        help="events per status, the lag of the oldest eligible event, failures by lastError",
        description="Events per status, how long the oldest eligible event has waited (the "
        "lag), and FAILED events grouped by lastError; the first line names the project, "
        "database and collection read, and the emulator when it is one.",
    )
    parser.add_argument("--json", action="store_true", help="print JSON for scripts")
    add_lock_timeout(parser)
    parser.set_defaults(run=run)
    register_watchdog(commands)


# Re-drive jobs `outbox status` lists: the newest few (a running one is among them).
STATUS_JOBS = 5


def run(args: argparse.Namespace, settings: Settings) -> int:
    db = ops_client(settings)
    jobs = JobStore(
        db,
        args.config.collections.redrive,
        lease_seconds=lock_timeout(args),
        timeout=settings.firestore_timeout_seconds,
    ).recent(STATUS_JOBS)
    status = read_status(
        db,
        settings.outbox_collection,
        now=utcnow(),
        lock_timeout_seconds=lock_timeout(args),
        timeout=settings.firestore_timeout_seconds,
        partitions=args.config.partitions().count,
    )
    source = read_from(db, settings, settings.outbox_collection)
    if args.json:
        print_json({**status.to_json(), "redriveJobs": jobs_json(jobs), "readFrom": source})
        return 0
    print(read_from_line(source) + "\n")
    unscheduled = ""
    if status.unscheduled:
        named = ", ".join(status.unscheduled_ids)
        more = status.unscheduled - len(status.unscheduled_ids)
        unscheduled = (
            f" ({status.unscheduled} without nextAttemptAt or partition: {named}"
            f"{f' and {more} more' if more > 0 else ''})"
        )
    notes = {
        EventStatus.PENDING.value: f"{status.due} due now{unscheduled}",
        EventStatus.PROCESSING.value: f"{status.stuck} past their lease",
    }
    rows = [(n, s, notes.get(s, "")) for s, n in status.counts.items()]
    print_table(("events", "status", ""), rows, right=1)
    if status.lag is None:
        print("\nlag: none (no event is due)")
    else:
        print(
            f"\nlag: {human(status.lag.total_seconds())} "
            f"(oldest eligible event {status.oldest_event_id})"
        )
    if status.failures:
        shown = status.failures_read
        total = status.counts[EventStatus.FAILED.value]
        print(f"\nFAILED events by lastError{'' if shown >= total else f' (first {shown})'}:")
        print_table(("events", "lastError"), [(n, e) for e, n in status.failures], right=1)
    if jobs:
        print("\nre-drive jobs (newest first; outbox replay --list):")
        print_table(JOB_COLUMNS, job_rows(jobs))
    return 0


def register_watchdog(commands: Any) -> None:
    parser = commands.add_parser(
        "watchdog",
        help="check the relay's heartbeat and the backlog once; alert on what is wrong",
        description="Reads the relay's heartbeat and the backlog (29 document reads a check "
        "with 16 partitions), "
        "judges them by the WATCHDOG_* thresholds and opens or closes incidents: an ERROR "
        "log line, a metric and a webhook message (WATCHDOG_WEBHOOK_URL) once per incident, "
        "and one when it recovers. Exit status 0: healthy; 3: a problem was found.",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(run=run_watchdog)


def run_watchdog(args: argparse.Namespace, settings: Settings) -> int:
    report = make_watchdog(args.config).check()
    if args.json:
        print_json(report.to_json())
    else:
        for problem in report.health.problems:
            print(f"{problem.code.value}: {problem.message}")
        if report.health.ok:
            print("healthy")
        if report.notices.send_error:
            print(f"webhook: {report.notices.send_error}")
    return 0 if report.health.ok else 3
