"""`outbox receiver`: a downstream consumer (by default the example's `OrderCounter`) as an
HTTP service."""

from __future__ import annotations

import argparse
from typing import Any

from firestore_outbox.cli.output import wait_until_stopped
from firestore_outbox.cli.reference import load
from firestore_outbox.config.wiring import build_responder
from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.observability.telemetry import add_metrics_port, configure_telemetry

DEFAULT_CONSUMER = "firestore_outbox.example:OrderCounter"


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "receiver",
        help="serve the reference downstream: verify, deduplicate through the inbox, count "
        "orders per customer",
        description="Serve the reference downstream consumer (or yours: --consumer) over HTTP "
        "until Ctrl-C. The reference one: verify "
        "each delivery's signature (RECEIVER_SIGNING_SECRET), apply it once through the "
        "Firestore inbox (INBOX_COLLECTION) and count orders per customer "
        "(RECEIVER_COUNTS_COLLECTION). Prints the URL to point DOWNSTREAM_SERVICE_URL at.",
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)"
    )
    parser.add_argument(
        "--port", type=int, default=8000, help="port to listen on; 0 picks one (default 8000)"
    )
    parser.add_argument(
        "--no-verify",
        action="store_true",
        help="accept unsigned deliveries, for local experiments only (default: verify)",
    )
    parser.add_argument(
        "--consumer",
        default=DEFAULT_CONSUMER,
        metavar="MODULE:CLASS",
        help="your consumer: CLASS(db, config) is called once at start (a Firestore client, a "
        "firestore_outbox.consumer.ReceiverConfig) and returns the responder, called for "
        "every request, from several threads, with a Received and returning a ReceiverAnswer; it "
        "verifies (read_delivery), deduplicates (Inbox) and answers by the relay's wire table "
        "itself (documentation: Consuming events > Your own consumer) "
        f"(default: {DEFAULT_CONSUMER}, the example order counter that comes with the library)",
    )
    add_metrics_port(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    counter = build_responder(
        args.config, load(args.consumer, "--consumer"), verify_signatures=not args.no_verify
    )
    configure_telemetry(
        args.config.environ, metrics_port=args.metrics_port
    )  # OTEL_*, --metrics-port
    with Receiver(counter, host=args.host, port=args.port, keep=False) as receiver:
        return wait_until_stopped(f"listening on {receiver.url}")
