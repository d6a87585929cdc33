"""`outbox inspect EVENT_ID`: one outbox document, whole, as JSON."""

from __future__ import annotations

import argparse
from typing import Any

from firestore_outbox.cli.failures import CommandFailed
from firestore_outbox.cli.output import ops_client, print_json
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.ops import event_document


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "inspect",
        help="print one outbox event, every field, as JSON",
        description="Print one outbox event, every field, as JSON (timestamps in RFC 3339 "
        "UTC), with the document's _createTime and _updateTime.",
    )
    parser.add_argument("event_id", metavar="EVENT_ID", help="the event's id (its document id)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    document = event_document(ops_client(settings), settings.outbox_collection, args.event_id)
    if document is None:
        raise CommandFailed(f"no event {args.event_id} in {settings.outbox_collection}")
    print_json(document)
    return 0
