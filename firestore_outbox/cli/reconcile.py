"""`outbox reconcile`: report what should never be there; exit 1 when anything is."""

from __future__ import annotations

import argparse
import datetime
from typing import Any

from firestore_outbox.cli.failures import CommandFailed
from firestore_outbox.cli.output import (
    add_lock_timeout,
    duration,
    human,
    lock_timeout,
    ops_client,
    print_json,
    print_table,
    utcnow,
)
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.ops import find_anomalies
from firestore_outbox.relay.events import rfc3339


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "reconcile",
        help="report events stuck past their lease, aggregates with no event, events with no "
        "aggregate",
        description="Report anomalies: PROCESSING events past their lease, PENDING events the "
        "due query cannot see, and for each aggregate named with --aggregate (by default the "
        "reference application's orders) its documents with no outbox event and its events "
        "whose document does not exist (both within --since, by the documents' createdAt). "
        "Writes nothing; exits 1 when it finds any.",
    )
    parser.add_argument(
        "--aggregate",
        action="append",
        type=_aggregate,
        metavar="TYPE=COLLECTION",
        dest="aggregates",
        help="check the documents of COLLECTION against the events of aggregateType TYPE; "
        "repeat for each aggregate (default: order=ORDERS_COLLECTION)",
    )
    parser.add_argument(
        "--since",
        type=duration,
        default=86400.0,
        metavar="DURATION",
        help="check orders and events created within this window (default 24h); keep it "
        "shorter than the retention",
    )
    parser.add_argument("--limit", type=int, default=100, help="ids listed per kind (default 100)")
    parser.add_argument("--json", action="store_true", help="print JSON for scripts")
    add_lock_timeout(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    if args.limit < 0:  # a negative slice would drop ids from the end, not list none
        raise CommandFailed("--limit must be at least 0", 2)
    aggregates = dict(args.aggregates or [("order", settings.orders_collection)])
    now = utcnow()
    found = find_anomalies(
        ops_client(settings),
        aggregates=aggregates,
        outbox=settings.outbox_collection,
        now=now,
        since=now - datetime.timedelta(seconds=args.since),
        lock_timeout_seconds=lock_timeout(args),
        limit=args.limit,
        timeout=settings.firestore_timeout_seconds,
        partitions=args.config.partitions().count,
    )
    if args.json:
        print_json(
            {
                "counts": found.counts,
                "stuckEvents": found.stuck_events,
                "ordersWithoutEvent": found.orders_without_event,
                "eventsWithoutOrder": found.events_without_order,
                "unscheduledEvents": found.unscheduled_events,
                "aggregates": {
                    kind: {
                        "collection": mine.collection,
                        "counts": mine.counts,
                        "withoutEvent": mine.without_event,
                        "eventsWithoutDocument": mine.events_without_document,
                    }
                    for kind, mine in found.aggregates.items()
                },
            }
        )
        return 1 if found.total else 0
    named = ", ".join(f"{kind} in {collection}" for kind, collection in aggregates.items())
    print(f"checked events and the aggregates {named} created in the last {human(args.since)}")
    stuck = [
        (e["eventId"], e["processingInstanceId"], e["attempts"], _when(e["updatedAt"]))
        for e in found.stuck_events
    ]
    _section(
        "PROCESSING past their lease",
        found.counts["stuck"],
        ("eventId", "holder", "attempts", "leased at"),
        stuck,
    )
    for kind, mine in found.aggregates.items():
        _section(
            f"{mine.collection} with no outbox event ({kind})",
            mine.counts["withoutEvent"],
            ("id",),
            [(missing,) for missing in mine.without_event],
        )
        _section(
            f"{kind} events whose document in {mine.collection} does not exist",
            mine.counts["eventsWithoutDocument"],
            ("eventId", "aggregateId"),
            [(e["eventId"], e["aggregateId"]) for e in mine.events_without_document],
        )
    unscheduled = [
        (e["eventId"], _short(e["nextAttemptAt"]), _when(e["createdAt"]))
        for e in found.unscheduled_events
    ]
    _section(
        "PENDING without a timestamp nextAttemptAt or a partition (the next relay run takes them)",
        found.counts["unscheduled"],
        ("eventId", "nextAttemptAt", "created at"),
        unscheduled,
    )
    return 1 if found.total else 0


def _short(value: Any) -> str:
    text = "(missing)" if value is None else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _section(title: str, total: int, headers: tuple[str, ...], rows: list[tuple[Any, ...]]) -> None:
    print(f"\n{title}: {total}")
    if rows:
        print_table(headers, rows)
        if total > len(rows):
            print(f"... and {total - len(rows)} more")


def _when(moment: Any) -> str:
    return rfc3339(moment) if isinstance(moment, datetime.datetime) else str(moment)


def _aggregate(text: str) -> tuple[str, str]:
    kind, _, collection = text.partition("=")
    if not kind or not collection or "/" in collection:
        raise argparse.ArgumentTypeError(
            f"expected TYPE=COLLECTION (for example invoice=invoices), got {text!r}"
        )
    return kind, collection
