"""What the operations commands share: durations in and out, tables and JSON out."""

from __future__ import annotations

import argparse
import datetime
import os
import re
import signal
import sys
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING, Any

from firestore_outbox.config.environment import DOTENV_FILE
from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.firestore.deadline import with_deadline
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.numbers import MAX_SECONDS
from firestore_outbox.numbers import human as human  # re-exported for the commands
from firestore_outbox.relay.events import encode_json

if TYPE_CHECKING:
    from google.cloud.firestore import Client

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)([smhd]?)$")


def duration(text: str) -> float:
    """Seconds, more than 0, from `90`, `90s`, `15m`, `36h` or `7d` (an argparse type)."""
    match = _DURATION.match(text.strip().lower())
    if not match:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration such as 90s, 15m, 36h, 7d")
    seconds = float(match.group(1)) * _UNITS[match.group(2) or "s"]
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a duration must be more than 0")
    if seconds > MAX_SECONDS:  # a date that far back or ahead is past year 9999 or year 1
        raise argparse.ArgumentTypeError(f"{text!r}: a duration must be at most 100 years")
    return seconds


def seconds(text: str) -> float:
    """A number of seconds more than 0 (an argparse type)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value <= MAX_SECONDS:  # NaN and the infinities too
        raise argparse.ArgumentTypeError(
            f"{text!r}: must be a number of seconds more than 0 and at most 100 years"
        )
    return value


def ops_client(settings: Settings) -> Client:
    """A client whose every call ends within FIRESTORE_TIMEOUT_SECONDS, retries included."""
    return with_deadline(get_db_client(settings), settings.firestore_timeout_seconds)


def add_lock_timeout(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--lock-timeout",
        type=duration,
        default=None,
        metavar="DURATION",
        help="when a PROCESSING lease counts as abandoned "
        "(default RELAY_LOCK_TIMEOUT_SECONDS, 300)",
    )


def lock_timeout(args: argparse.Namespace) -> float:
    """`--lock-timeout`, else RELAY_LOCK_TIMEOUT_SECONDS from the invocation's configuration."""
    if args.lock_timeout is not None:
        return float(args.lock_timeout)
    return float(args.config.seconds("RELAY_LOCK_TIMEOUT_SECONDS", 300.0))


def utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def read_from(db: Client, settings: Settings, collection: str) -> dict[str, Any]:
    """Where a command read: the project, database and collection, the emulator's address
    (None: the real Firestore), and whether a `./.env` was there to read settings from."""
    return {
        "projectId": db.project,
        "database": settings.database,
        "collection": collection,
        "emulatorHost": settings.emulator_host,
        "dotenv": os.path.isfile(DOTENV_FILE),
    }


def read_from_line(source: dict[str, Any]) -> str:
    """`read_from` as the first line of a command's text output."""
    where = (
        f"the emulator at {source['emulatorHost']}"
        if source["emulatorHost"]
        else "Firestore (not the emulator)"
    )
    settings = "the environment and ./.env" if source["dotenv"] else "the environment (no ./.env)"
    return (
        f"read project {source['projectId']}, database {source['database']}, collection "
        f"{source['collection']} on {where}; settings from {settings}"
    )


def print_json(value: Any) -> None:
    print(encode_json(value, indent=2).decode())


def print_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[Any]],
    right: int = 0,
    out: IO[str] | None = None,
) -> None:
    """Columns padded to fit; the first `right` columns right-aligned (numbers); on `out`
    (default stdout)."""
    cells = [[str(c) for c in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    for row in cells:
        line = [
            cell.rjust(width) if i < right else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        print("  ".join(line).rstrip(), file=out or sys.stdout)


def wait_until_stopped(ready: str) -> int:
    """Print `ready` (the line a caller waits for), block until Ctrl-C or SIGTERM, then return
    exit code 0. SIGTERM ends the wait like Ctrl-C, so a supervisor's stop unwinds the
    caller's `with` blocks (an emulator's JVM, a listening socket) instead of killing the
    process under them. The line is printed inside the wait: a stop sent as soon as it is
    read lands there, not in the instant before (exit 130, `error: interrupted`)."""
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        print(ready, flush=True)
        while True:
            signal.pause()
    except KeyboardInterrupt:
        return 0
