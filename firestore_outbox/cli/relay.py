"""`outbox relay`: deliver due events from this machine, as the timer-triggered function does,
or with `--follow` keep delivering each event as it commits until Ctrl-C or SIGTERM."""

from __future__ import annotations

import _thread
import argparse
import json
import signal
import threading
from typing import Any

from firestore_outbox.cli.failures import CommandFailed
from firestore_outbox.cli.output import duration, seconds
from firestore_outbox.config.wiring import backlog, build_relay
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.observability.metrics import BacklogGauges
from firestore_outbox.observability.telemetry import add_metrics_port, configure_telemetry, flush
from firestore_outbox.relay import Relay
from firestore_outbox.relay.follow.follower import Follower, route_watch_failures
from firestore_outbox.relay.follow.progress import DEFAULT_PROGRESS_SECONDS

# How long `outbox relay --follow` may take to stop after Ctrl-C or SIGTERM before it is
# interrupted (a stop settles what the follower holds: well under a second when Firestore
# answers).
STOP_GRACE_SECONDS = 5.0


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
    relay = build_relay(args.config)
    # OTLP from the OTEL_* variables, Prometheus with --metrics-port; nothing otherwise.
    if configure_telemetry(args.config.environ, metrics_port=args.metrics_port) and args.follow:
        BacklogGauges(backlog(relay, args.config))
    try:
        with relay:  # its publisher's connections end with the command, not at exit
            return _run(args, relay)
    finally:
        flush()


def _run(args: argparse.Namespace, relay: Relay) -> int:
    if args.follow:
        # This process is the CLI's own: a listener stream's last error is logged as the
        # reason it went down, not printed as a bare traceback (opt-in for library callers).
        route_watch_failures()
        follower = Follower(relay, progress_seconds=args.progress_every)
        stopping = _StopOnSignals(follower)
        try:
            summary = follower.run()
        finally:
            stopping.cancel()
    else:
        summary = relay.run(time_budget=args.time_budget).to_json()
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


class _StopOnSignals:
    """Ctrl-C or SIGTERM asks the follower to stop: it settles what it holds and returns. The
    main thread may be in a Firestore call that does not answer (a frozen Firestore), and
    would only come back at the call's deadline (60 s and more). So if the follower has not
    returned `STOP_GRACE_SECONDS` after the signal, or at a second one, the command is
    interrupted as any other is (`error: interrupted`, exit status 130, its calls cancelled
    by `firestore_outbox.firestore.client.close_clients`)."""

    def __init__(self, follower: Follower) -> None:
        self._follower = follower
        self._grace: threading.Timer | None = None
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, self._handle)

    def _handle(self, signum: int, _frame: Any) -> None:
        if self._grace is not None:
            raise KeyboardInterrupt  # a second signal, or the grace is over
        self._follower.stop()
        # interrupt_main runs this handler again in the main thread, as a second signal would,
        # even while it waits in a gRPC call (gRPC's waits let Python's handlers run).
        self._grace = threading.Timer(
            STOP_GRACE_SECONDS, _thread.interrupt_main, args=(signal.Signals(signum),)
        )
        self._grace.daemon = True
        self._grace.start()

    def cancel(self) -> None:
        """The follower returned: no interruption."""
        if self._grace is not None:
            self._grace.cancel()
