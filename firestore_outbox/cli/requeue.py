"""`outbox requeue`: FAILED events back to PENDING with their attempts reset."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from firestore_outbox.cli.failures import CommandFailed
from firestore_outbox.cli.output import ops_client, print_table
from firestore_outbox.cli.progress import ProgressBar
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.ops import plan_requeue, requeue
from firestore_outbox.ops.requeue import preview

DEFAULT_LIST = 20


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "requeue",
        help="put FAILED events back to PENDING (by id, by event type, or all), attempts reset",
        description="Put FAILED events back to PENDING, due at once, with attempts reset to 0 "
        "(lastError is kept). Prints how many match before it writes. Each write is "
        "conditional on the event being unchanged since it was read.",
    )
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "event_ids", nargs="*", metavar="EVENT_ID", default=[], help="these events, by id"
    )
    which.add_argument("--event-type", metavar="TYPE", help="every FAILED event of this type")
    which.add_argument("--all", action="store_true", help="every FAILED event")
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="count and list what would be requeued (id, attempts, lastError), write nothing",
    )
    parser.add_argument(
        "--list",
        type=int,
        default=DEFAULT_LIST,
        metavar="N",
        help=f"with --dry-run: how many events to list, 0 to 500 (default {DEFAULT_LIST})",
    )
    parser.add_argument(
        "--yes", action="store_true", help="do not ask on a terminal (default: ask)"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    if not 0 <= args.list <= 500:
        raise CommandFailed("--list must be between 0 and 500", 2)
    db = ops_client(settings)
    collection = settings.outbox_collection
    plan = plan_requeue(db, collection, event_ids=args.event_ids, event_type=args.event_type)
    for event_id, reason in plan.skipped.items():
        print(f"skipped {event_id}: {reason}")
    print(f"{plan.matched} FAILED events to requeue")
    if args.dry_run or not plan.matched:
        if args.dry_run:
            _list(plan, args.list)
            print("dry run: nothing written")
        return 0
    if sys.stdin.isatty() and not args.yes and not _confirmed(plan.matched):
        print("nothing written")
        return 1
    bar = ProgressBar(plan.matched, "requeue")
    done, changed = requeue(
        db, collection, plan, on_page=bar.update, timeout=settings.firestore_timeout_seconds
    )
    bar.close()
    print(f"requeued {done}" + (f"; {changed} changed meanwhile and left alone" if changed else ""))
    return 0


def _list(plan: Any, limit: int) -> None:
    """The first `limit` events the requeue would touch, and why each is there."""
    rows = preview(plan, limit)
    if rows:
        print_table(("eventId", "attempts", "why: FAILED with lastError"), rows)
    if plan.matched > len(rows):
        print(f"... and {plan.matched - len(rows)} more")


def _confirmed(count: int) -> bool:
    return input(f"Requeue {count} events? [y/N] ").strip().lower() in ("y", "yes")
