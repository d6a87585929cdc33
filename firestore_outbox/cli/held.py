"""`outbox held`: aggregates a FAILED event holds, and releasing one."""

from __future__ import annotations

import argparse
from typing import Any

from firestore_outbox.cli.output import ops_client
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.ops.held import list_held, release_held


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "held",
        help="list aggregates whose later events wait behind a FAILED event, or release one",
        description="With RELAY_FAILED_HEAD=hold a FAILED event holds its aggregate's later "
        "events. List the held aggregates, or release one with --release: its FAILED events "
        "stay FAILED (requeue them instead to deliver them first) and the later events go on.",
    )
    parser.add_argument(
        "--release",
        metavar="AGGREGATE_ID",
        help="release this aggregate (default: none, list the held aggregates)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    db = ops_client(settings)
    collection = settings.outbox_collection
    if args.release is not None:
        released = release_held(
            db, collection, args.release, timeout=settings.firestore_timeout_seconds
        )
        print(f"released {released} held events of aggregate {args.release}")
        return 0 if released else 1
    held = list_held(db, collection)
    for aggregate in held:
        print(
            f"{aggregate.aggregate_type} {aggregate.aggregate_id}: held by "
            f"{', '.join(aggregate.event_ids)} ({aggregate.last_error})"
        )
    print(f"{len(held)} held aggregates")
    return 0
