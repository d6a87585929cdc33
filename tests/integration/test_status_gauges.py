"""`outbox status --json` and the backlog gauges show the same figures: one outbox with every
kind of event, read by both on the emulator."""

from __future__ import annotations

import json
from typing import Any

from google.cloud import firestore

from app.config import Settings
from app.metrics import BacklogGauges
from app.ops.status import backlog_reader
from tests.integration.test_cli_ops import Run, prepared, run

__all__ = ["prepared", "run"]  # the fixtures, shared with the command's own tests


def test_status_json_shows_the_gauges_counts_and_age(
    run: Run, db: firestore.Client, settings: Settings, prepared: dict[str, Any]
) -> None:
    read = backlog_reader(db, settings.outbox_collection, lock_timeout_seconds=300)
    reading = BacklogGauges(read, max_age=0).reading()
    code, out, _ = run("status", "--json")

    assert code == 0 and reading is not None
    status = json.loads(out)
    counts, age = reading
    assert counts == status["counts"]  # the `outbox.backlog` gauge, status by status
    assert age is not None and status["lagSeconds"] is not None
    # `outbox.oldest_due.age`: the same oldest event, read a moment apart.
    assert abs(age - status["lagSeconds"]) < 30
