"""`outbox demo`: the main job from the README, end to end on a local emulator."""

from __future__ import annotations

import argparse
from typing import Any

from app.config import Settings
from app.demo import run_demo


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "demo",
        help="write orders on a local Firestore emulator, relay their events, show the deliveries",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    return run_demo(settings)
