"""`outbox relay`: deliver due events from this machine, as the timer-triggered function does,
or with `--follow` keep delivering each event as it commits until Ctrl-C or SIGTERM."""

from __future__ import annotations

import argparse
import json
import signal
from typing import Any

from app.cli.failures import CommandFailed
from app.cli.output import duration, seconds
from app.config import Settings
from app.firestore_client import get_db_client
from app.metrics import BacklogGauges
from app.ops.status import backlog_reader
from app.relay import Relay
from app.relay.follow import Follower
from app.relay.follow_progress import DEFAULT_PROGRESS_SECONDS
from app.telemetry import add_metrics_port, configure_telemetry, flush


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "relay",
        help="deliver due outbox events once, as the timer-triggered function would, "
        "and print the summary as JSON",
        description="Deliver due outbox events from this machine with the settings of the "
        "Function Compute relay (RELAY_* and DOWNSTREAM_SERVICE_URL), then print the run's "
        "summary as one JSON line on stdout. Exit status 1, with an error: line, when the "
        "run stopped on an error. With --follow, keep running and deliver each event moments "
        "after it commits.",
    )
    parser.add_argument(
        "--time-budget",
        type=seconds,
        default=None,
        metavar="SECONDS",
        help="how long to keep draining, in seconds (default RELAY_TIME_BUDGET_SECONDS, 50)",
    )
    parser.add_argument(
        "--follow",
        action="store_true",
        help="keep running: deliver each event moments after it commits (a Firestore "
        "listener), beside the timer function if it runs too; stop with Ctrl-C or SIGTERM "
        "(default: off, one run)",
    )
    parser.add_argument(
        "--progress-every",
        type=duration,
        default=DEFAULT_PROGRESS_SECONDS,
        metavar="DURATION",
        help="with --follow: how often to log a relay.follow_progress line "
        f"(default {DEFAULT_PROGRESS_SECONDS:g}s)",
    )
    add_metrics_port(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    db, config = get_db_client(settings), args.config.relay()
    relay = Relay(db, settings, config)
    # OTLP from the OTEL_* variables, Prometheus with --metrics-port; nothing otherwise.
    if configure_telemetry(metrics_port=args.metrics_port) and args.follow:
        read = backlog_reader(
            db,
            settings.outbox_collection,
            lock_timeout_seconds=config.lock_timeout_seconds,
            timeout=settings.firestore_timeout_seconds,
        )
        BacklogGauges(read)
    try:
        with relay:  # its publisher's connections end with the command, not at exit
            return _run(args, relay)
    finally:
        flush()


def _run(args: argparse.Namespace, relay: Relay) -> int:
    if args.follow:
        follower = Follower(relay, progress_seconds=args.progress_every)
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: follower.stop())
        summary = follower.run()
    else:
        summary = relay.run(time_budget=args.time_budget)
    print(json.dumps(summary, sort_keys=True), flush=True)
    # The summary is on stdout for scripts; the reason, on stderr, for the person.
    if summary["status"] != "ok":
        raise CommandFailed(f"the relay run stopped: {summary.get('error', summary['status'])}")
    if summary.get("stoppedBy") == "channel":
        raise CommandFailed(
            f"the relay run stopped: the downstream channel is broken ({summary['channel']}); "
            f"{summary['released']} leased events were handed back without spending an attempt"
        )
    return 0
