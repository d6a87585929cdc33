"""`outbox purge`: delete PROCESSED events past their retention; stamp `expireAt` for TTL."""

from __future__ import annotations

import argparse
import datetime
from typing import Any

from firestore_outbox.cli.failures import CommandFailed
from firestore_outbox.cli.output import duration, human, ops_client, utcnow
from firestore_outbox.cli.progress import ProgressBar
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.ops import backfill_expiry, purge_processed
from firestore_outbox.ops.purge import count_processed
from firestore_outbox.ops.scan import PAGE_SIZE
from firestore_outbox.relay.config import DEFAULT_RETENTION_SECONDS


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "purge",
        help="delete PROCESSED events older than the retention, in batches",
        description="Delete PROCESSED events whose processedAt is older than the retention, "
        "in batches, with a progress bar; events within the retention, and PENDING, "
        "PROCESSING and FAILED events, are kept. With --set-expire-at, also stamp expireAt "
        "(processedAt + retention) on the PROCESSED events kept that have none, for a "
        "Firestore TTL policy.",
    )
    parser.add_argument(
        "--older-than",
        type=duration,
        default=None,
        metavar="DURATION",
        help="the retention, e.g. 7d or 36h (default OUTBOX_RETENTION_SECONDS, 7 days)",
    )
    parser.add_argument(
        "--batch-size",
        type=int,
        default=PAGE_SIZE,
        help=f"deletes per batch, 1 to {PAGE_SIZE} (default {PAGE_SIZE})",
    )
    parser.add_argument("--set-expire-at", action="store_true", help="also backfill expireAt")
    parser.add_argument("--dry-run", action="store_true", help="count, write nothing")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    retention = args.older_than
    if retention is None:
        retention = args.config.seconds("OUTBOX_RETENTION_SECONDS", DEFAULT_RETENTION_SECONDS)
    if retention <= 0:
        raise CommandFailed("the retention is 0 (keep for ever): pass --older-than DURATION", 2)
    if not 1 <= args.batch_size <= PAGE_SIZE:
        raise CommandFailed(f"--batch-size must be between 1 and {PAGE_SIZE}", 2)
    db, collection = ops_client(settings), settings.outbox_collection
    size, timeout = args.batch_size, settings.firestore_timeout_seconds
    cutoff = utcnow() - datetime.timedelta(seconds=retention)
    partitions = args.config.partitions().count
    stale = count_processed(db, collection, "<", cutoff, partitions)
    print(
        f"{stale} PROCESSED events processed more than {human(retention)} ago "
        f"(before {cutoff:%Y-%m-%dT%H:%M:%SZ})"
    )
    kept = count_processed(db, collection, ">=", cutoff, partitions) if args.set_expire_at else 0
    if args.set_expire_at:
        print(f"{kept} PROCESSED events within the retention to check for expireAt")
    if args.dry_run:
        print("dry run: nothing written")
        return 0
    if stale:
        bar = ProgressBar(stale, "purge")
        deleted = purge_processed(
            db,
            collection,
            cutoff,
            batch_size=size,
            on_page=bar.update,
            timeout=timeout,
            partitions=partitions,
        )
        bar.close()
        print(f"deleted {deleted}")
    if kept:
        bar = ProgressBar(kept, "expireAt")
        stamped = backfill_expiry(
            db,
            collection,
            cutoff,
            retention,
            batch_size=size,
            on_page=bar.update,
            timeout=timeout,
            partitions=partitions,
        )
        bar.close()
        print(f"set expireAt on {stamped}")
    return 0
