"""The `outbox` command: `outbox demo`, `outbox relay` and `outbox emulator`."""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
from collections.abc import Sequence

from app.config import Settings, load_settings
from app.demo import run_demo
from app.emulator import FirestoreEmulator
from app.errors import OutboxError
from app.firestore_client import get_db_client
from app.relay import Relay, load_relay_config


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="outbox", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser(
        "demo",
        help="write orders and their outbox events on the local Firestore emulator and show them",
    )
    relay = commands.add_parser(
        "relay",
        help="deliver due outbox events once, as the timer-triggered function would, "
        "and print the summary as JSON",
    )
    relay.add_argument(
        "--time-budget",
        type=float,
        default=None,
        help="seconds (default RELAY_TIME_BUDGET_SECONDS)",
    )
    emulator = commands.add_parser("emulator", help="run a Firestore emulator until Ctrl-C")
    emulator.add_argument("--port", type=int, default=None, help="default: a free port")
    args = parser.parse_args(argv)
    try:
        settings = load_settings()
        logging.basicConfig(level=settings.log_level, format="%(levelname)s %(name)s: %(message)s")
        if args.command == "demo":
            return run_demo(settings)
        if args.command == "relay":
            return _relay_once(settings, args.time_budget)
        return _run_emulator(args.port)
    except OutboxError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _relay_once(settings: Settings, time_budget: float | None) -> int:
    relay = Relay(get_db_client(settings), settings, load_relay_config())
    summary = relay.run(time_budget=time_budget)
    print(json.dumps(summary, sort_keys=True))
    return 0 if summary["status"] == "ok" else 1


def _run_emulator(port: int | None) -> int:
    with FirestoreEmulator(port=port) as emulator:
        print(f"export FIRESTORE_EMULATOR_HOST={emulator.host_port}", flush=True)
        try:
            while True:
                signal.pause()
        except KeyboardInterrupt:
            return 0


if __name__ == "__main__":
    sys.exit(main())
