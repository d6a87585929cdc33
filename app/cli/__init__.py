"""The `outbox` command. Each subcommand lives in its own module under `app.cli`.

A command module exposes `register(commands)`, which adds its parser to the subparsers and
sets `run=<function(args, settings) -> exit code>` as a default.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version

from google.api_core import exceptions as google_exceptions

from app.cli import (
    demo,
    emulator,
    held,
    inspect,
    purge,
    receiver,
    reconcile,
    relay,
    requeue,
    status,
)
from app.config import Settings, load_settings
from app.deadline import UNANSWERED, error_class, firestore_host, unanswered
from app.errors import OutboxError
from app.logs import configure_logging, configured_secrets

COMMANDS = (status, inspect, requeue, held, purge, relay, reconcile, demo, receiver, emulator)

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
    settings: Settings | None = None
    try:
        settings = load_settings()
        configure_logging(configured_secrets(), settings.log_level)
        code: int = args.run(args, settings)
        return code
    except OutboxError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except google_exceptions.GoogleAPIError as exc:
        assert settings is not None  # loading settings makes no Firestore call
        print(f"error: {_firestore_error(settings, exc)}", file=sys.stderr)
        return 1


def _firestore_error(settings: Settings, exc: google_exceptions.GoogleAPIError) -> str:
    if isinstance(exc, UNANSWERED):
        return unanswered(settings, exc)
    # Firestore answered and refused: its class says why; its message is Firestore's, not ours.
    return f"Firestore at {firestore_host(settings)} refused the request ({error_class(exc)})"


def _version() -> str:
    try:
        return version("firestore-outbox")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


if __name__ == "__main__":
    sys.exit(main())
