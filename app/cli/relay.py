"""`outbox relay`: deliver due events from this machine, as the timer-triggered function does."""

from __future__ import annotations

import argparse
import json
from typing import Any

from app.config import Settings
from app.firestore_client import get_db_client
from app.relay import Relay, load_relay_config


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "relay",
        help="deliver due outbox events once, as the timer-triggered function would, "
        "and print the summary as JSON",
    )
    parser.add_argument(
        "--time-budget",
        type=float,
        default=None,
        help="seconds (default RELAY_TIME_BUDGET_SECONDS)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    relay = Relay(get_db_client(settings), settings, load_relay_config())
    summary = relay.run(time_budget=args.time_budget)
    print(json.dumps(summary, sort_keys=True))
    return 0 if summary["status"] == "ok" else 1
