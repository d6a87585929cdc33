"""`outbox demo`: the main job from the README (docs/getting-started.md), end to end on a
local emulator."""

from __future__ import annotations

import argparse
import dataclasses
import logging
from typing import Any

from firestore_outbox.firestore.settings import Settings


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "demo",
        help="write orders on a local Firestore emulator, relay their events, show the deliveries",
        description="The whole path on a Firestore emulator, told step by step on stdout: "
        "orders and their events written in one batch, an idempotent retry, a conflicting "
        "retry and invalid input refused, the relay's Function Compute handler delivering to "
        "the reference receiver, and what the receiver applied once. Uses the emulator at "
        "FIRESTORE_EMULATOR_HOST, or starts one (and stops it) when that is unset. Writes only "
        "to collections of its own, demo-<run id>-*, so it is safe on an emulator that holds "
        "other data, as often as you like.",
    )
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="also show the library's JSON log lines at LOG_LEVEL (default INFO) on stderr; "
        "without it only warnings and errors are logged, so stdout reads as the story",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    if not args.verbose:
        quiet = max(logging.WARNING, logging.getLevelName(settings.log_level))
        settings = dataclasses.replace(settings, log_level=logging.getLevelName(quiet))
    # `main` configured logging at LOG_LEVEL; "google" keeps its own level (see
    # firestore_outbox.observability.logs).
    for name in ("", "google"):
        logging.getLogger(name).setLevel(settings.log_level)
    from firestore_outbox.example import run_demo  # the example ships with the library

    return run_demo(settings)
