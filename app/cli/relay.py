"""`outbox relay`: deliver due events from this machine, as the timer-triggered function does,
or with `--follow` keep delivering each event as it commits until Ctrl-C or SIGTERM."""

from __future__ import annotations

import argparse
import json
import signal
from typing import Any

from app.cli.output import seconds
from app.config import Settings
from app.firestore_client import get_db_client
from app.relay import Relay, load_relay_config
from app.relay.follow import Follower


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "relay",
        help="deliver due outbox events once, as the timer-triggered function would, "
        "and print the summary as JSON",
    )
    parser.add_argument(
        "--time-budget",
        type=seconds,
        default=None,
        help="seconds (default RELAY_TIME_BUDGET_SECONDS)",
    )
    parser.add_argument(
        "--follow",
        action="store_true",
        help="keep running: deliver each event moments after it commits (a Firestore "
        "listener), beside the timer function if it runs too; stop with Ctrl-C or SIGTERM",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    relay = Relay(get_db_client(settings), settings, load_relay_config())
    if args.follow:
        follower = Follower(relay)
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: follower.stop())
        summary = follower.run()
    else:
        summary = relay.run(time_budget=args.time_budget)
    print(json.dumps(summary, sort_keys=True), flush=True)
    return 0 if summary["status"] == "ok" else 1
