"""`outbox emulator`: run a local Firestore emulator until Ctrl-C."""

from __future__ import annotations

import argparse
from typing import Any

from firestore_outbox.cli.output import wait_until_stopped
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.testing.emulator import FirestoreEmulator


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "emulator",
        help="run a Firestore emulator until Ctrl-C",
        description="Start a local Firestore emulator (Java 17 and the "
        "google-cloud-cli-firestore-emulator package; FIRESTORE_EMULATOR_LAUNCHER names the "
        "launcher if gcloud cannot find it), print the export FIRESTORE_EMULATOR_HOST=... "
        "line for it, and run until Ctrl-C or SIGTERM. A port already taken is refused.",
    )
    parser.add_argument(
        "--port", type=int, default=None, help="port on 127.0.0.1 (default: a free port)"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    with FirestoreEmulator(port=args.port) as emulator:
        return wait_until_stopped(f"export FIRESTORE_EMULATOR_HOST={emulator.host_port}")
