"""`outbox status` on a prepared outbox: counts, lag and failures, and nothing written."""

from __future__ import annotations

import json
from typing import Any

from google.cloud import firestore

from firestore_outbox.firestore.settings import Settings
from tests.support.operator_commands import Run, prepared_outbox, run_outbox, update_times  # noqa: F401  (fixtures)


def test_status_counts_the_lag_and_the_failures_and_writes_nothing(
    run: Run, db: firestore.Client, settings: Settings, prepared: dict[str, Any]
) -> None:
    before = update_times(db, settings)

    code, out, _ = run("status", "--json")

    assert code == 0
    status = json.loads(out)
    assert status["counts"] == {"PENDING": 3, "PROCESSING": 2, "PROCESSED": 5, "FAILED": 3}
    assert (status["due"], status["stuck"]) == (2, 1)
    # The stuck lease expired 55 minutes ago: older than any due PENDING event.
    assert status["oldestEligibleEventId"] == "stuck"
    assert 55 * 60 - 30 < status["lagSeconds"] < 55 * 60 + 30
    assert status["failures"] == [
        {"lastError": "gave up after attempt 5: HTTP 503: busy", "count": 2},
        {"lastError": "rejected after attempt 1: HTTP 422", "count": 1},
    ]

    code, out, _ = run("status")
    assert code == 0
    lines = out.splitlines()
    assert lines[2].split() == ["events", "status"]
    assert "5  PROCESSED" in out and "2 due now" in out and "1 past their lease" in out
    assert "lag: 55m" in out and "(oldest eligible event stuck)" in out
    assert "     2  gave up after attempt 5: HTTP 503: busy" in out
    assert update_times(db, settings) == before


def test_status_of_an_empty_outbox_has_no_lag(run: Run) -> None:
    code, out, _ = run("status", "--json")
    assert code == 0 and json.loads(out)["lagSeconds"] is None
    assert "lag: none" in run("status")[1]


def test_status_says_which_project_database_and_collection_it_read(
    run: Run, settings: Settings
) -> None:
    # The run fixture works in a folder with no .env: before, this was zeros and nothing else.
    code, out, _ = run("status")
    assert code == 0
    assert out.splitlines()[0] == (
        f"read project {settings.project_id}, database (default), collection "
        f"{settings.outbox_collection} on the emulator at {settings.emulator_host}; settings "
        "from the environment (no ./.env)"
    )
    code, out, _ = run("status", "--json")
    assert json.loads(out)["readFrom"] == {
        "projectId": settings.project_id,
        "database": "(default)",
        "collection": settings.outbox_collection,
        "emulatorHost": settings.emulator_host,
        "dotenv": False,
    }
