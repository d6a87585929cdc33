"""The `outbox` command. Each subcommand lives in its own module under `app.cli`.

A command module exposes `register(commands)`, which adds its parser to the subparsers and
sets `run=<function(args, settings) -> exit code>` as a default.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version

from app.cli import demo, emulator, inspect, purge, receiver, reconcile, relay, requeue, status
from app.config import load_settings
from app.errors import OutboxError
from app.logs import configure_logging, configured_secrets

COMMANDS = (status, inspect, requeue, purge, relay, reconcile, demo, receiver, emulator)

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="outbox", description="Operate a Firestore transactional outbox and its relay."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.register(commands)
    args = parser.parse_args(argv)
    try:
        settings = load_settings()
        configure_logging(configured_secrets(), settings.log_level)
        code: int = args.run(args, settings)
        return code
    except OutboxError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _version() -> str:
    try:
        return version("firestore-outbox")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


if __name__ == "__main__":
    sys.exit(main())
