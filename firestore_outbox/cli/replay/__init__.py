"""`outbox replay`: re-drive events (a dry run first), and run, pause, resume, cancel or list
re-drive jobs (docs/redrive.md); what it prints of jobs and dry runs is in `listing`.

With `--json` it prints one JSON document and nothing else (a question on a terminal goes
to stderr). Exit status: 0 the job ran as asked (`done`, `budget`, `paused`, `cancelled`) or
the action was done; 1 the job did not run here (not RUNNING, held by another runner, taken
over) or the question was answered no; 2 bad input, a `--budget` that fits no attempt, or a
selection that selects nothing (no job written); `EXIT_STOPPED_SHORT` (3) the run stopped
on a failure (`retry`: an answer to try later, `channel`: a broken channel), the job left
RUNNING for the next run.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import Any

from firestore_outbox.cli.failures import CommandFailed
from firestore_outbox.cli.output import duration, ops_client, print_json, utcnow
from firestore_outbox.cli.replay.listing import jobs_json, print_jobs, print_preview
from firestore_outbox.config.wiring import build_redrive
from firestore_outbox.errors import InvalidInput
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.redrive.selection import DELIVERED, STATUSES, Selection, parse_moment
from firestore_outbox.redrive.service import Redrive, runner_name
from firestore_outbox.redrive.targets import describe, target_for

DEFAULT_RATE = 10.0
EXIT_STOPPED_SHORT = 3
FAILED_STOPS = ("retry", "channel")


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "replay",
        help="re-drive events again (by time, type, aggregate, status) as a resumable job",
        description="Send selected events again, with their own ids, signed and marked "
        "`ce-outboxreplay: <job id>`, in per-aggregate order, at --rate, to the configured "
        "publisher or --target-url. Without an action: a dry run with --dry-run, else a new "
        "job that runs here until done (Ctrl-C leaves it resumable) or, with --detach, is "
        "left for the relay's Function Compute invocations to run.",
    )
    chosen = parser.add_argument_group("selection (default: every delivered event)")
    chosen.add_argument(
        "--since",
        metavar="WHEN",
        help="created at or after: RFC 3339 or 36h (default: no lower bound)",
    )
    chosen.add_argument(
        "--until",
        metavar="WHEN",
        help="created before: RFC 3339 or 2h (default: when the job is made)",
    )
    chosen.add_argument(
        "--event-type",
        action="append",
        default=[],
        metavar="TYPE",
        help="this type; repeat for several (default: every type)",
    )
    chosen.add_argument("--aggregate-type", metavar="TYPE", help="(default: every one)")
    chosen.add_argument("--aggregate-id", metavar="ID", help="one aggregate (default: all)")
    chosen.add_argument(
        "--status",
        action="append",
        default=[],
        choices=[*STATUSES, "all"],
        help="default PROCESSED (delivered); repeat for several",
    )
    parser.add_argument("--dry-run", action="store_true", help="count and show, write nothing")
    parser.add_argument(
        "--target-url",
        metavar="URL",
        help="POST here instead, no credentials in it (default: the configured publisher)",
    )
    parser.add_argument(
        "--rate",
        type=float,
        default=DEFAULT_RATE,
        help=f"events a second (default {DEFAULT_RATE:g})",
    )
    parser.add_argument("--by", help="who starts the job (default: your user name)")
    parser.add_argument("--detach", action="store_true", help="create the job, do not run it")
    parser.add_argument(
        "--budget",
        type=duration,
        help="run for at most this long, e.g. 10m; at least one attempt's time "
        "(default: until the job ends)",
    )
    parser.add_argument("--yes", action="store_true", help="do not ask on a terminal")
    parser.add_argument("--json", action="store_true", help="print JSON for scripts")
    action = parser.add_mutually_exclusive_group()
    for verb in ("run", "pause", "resume", "cancel", "show"):
        action.add_argument(
            f"--{verb}", dest=f"{verb}_job", metavar="JOB_ID", help=f"{verb} this job"
        )
    action.add_argument("--list", action="store_true", help="the newest jobs")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    redrive = build_redrive(args.config, ops_client(settings))
    for verb in ("pause", "resume", "cancel"):
        if getattr(args, f"{verb}_job"):
            print_jobs([redrive.jobs.move(getattr(args, f"{verb}_job"), verb)], args.json)
            return 0
    if args.show_job or args.list:
        jobs = [redrive.jobs.get(args.show_job)] if args.show_job else redrive.jobs.recent()
        print_jobs(jobs, args.json)
        return 0
    try:
        redrive.check_budget(args.budget, "--budget")
    except InvalidInput as exc:
        raise CommandFailed(str(exc), 2) from None
    if args.run_job:
        return _run(redrive, args.run_job, args)
    now = utcnow()
    try:
        selection = Selection(
            since=parse_moment("--since", args.since, now),
            until=parse_moment("--until", args.until, now),
            event_types=tuple(args.event_type),
            aggregate_type=args.aggregate_type,
            aggregate_id=args.aggregate_id,
            statuses=STATUSES
            if "all" in args.status
            else tuple(dict.fromkeys(args.status)) or DELIVERED,
        )
        target = target_for(args.target_url)
    except InvalidInput as exc:
        raise CommandFailed(str(exc), 2) from None
    if args.dry_run:
        print_preview(redrive, selection, target, args.rate, as_json=args.json)
        if not args.json:
            print("dry run: nothing written")
        return 0
    if sys.stdin.isatty() and not args.yes:
        # On stderr: with --json, stdout is the one document a script reads.
        print_preview(redrive, selection, target, args.rate, as_json=False, out=sys.stderr)
        print("Start this re-drive job? [y/N] ", end="", file=sys.stderr, flush=True)
        if input().strip().lower() not in ("y", "yes"):
            print("nothing written", file=sys.stderr)
            return 1
    try:
        job = redrive.start(selection, target=target, rate=args.rate, created_by=_who(args))
    except InvalidInput as exc:
        raise CommandFailed(str(exc), 2) from None
    if args.detach:
        if args.json:
            print_json({"job": jobs_json([job])[0], "run": None})
        else:
            print(f"job {job.job_id}: {job.counts['selected']} events to {describe(target)}")
        return 0
    if not args.json:
        print(f"job {job.job_id}: {job.counts['selected']} events to {describe(target)}")
    return _run(redrive, job.job_id, args, created=jobs_json([job])[0])


def _run(redrive: Redrive, job_id: str, args: argparse.Namespace, created: Any = None) -> int:
    report = redrive.run(job_id, owner=runner_name(), budget_seconds=args.budget)
    if args.json:
        ran = report.to_json()
        print_json(ran if created is None else {"job": created, "run": ran})
    elif not report.started:
        print(f"job {job_id} not run: {report.stopped}")
    else:
        print(
            f"job {job_id}: sent {report.sent}, rejected {report.rejected}, "
            f"skipped {report.skipped}; stopped: {report.stopped}"
        )
    if not report.started or report.stopped == "lost":
        return 1
    return EXIT_STOPPED_SHORT if report.stopped in FAILED_STOPS else 0


def _who(args: argparse.Namespace) -> str:
    if args.by:
        return str(args.by)
    try:
        return f"{getpass.getuser()}@{runner_name()}"
    except (KeyError, OSError):  # no user name in a container
        return runner_name()
