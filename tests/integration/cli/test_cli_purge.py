"""`outbox purge`: PROCESSED events past the retention deleted, `expireAt` backfilled; dry
runs write nothing."""

from __future__ import annotations

from typing import Any

import pytest
from google.cloud import firestore

from firestore_outbox.firestore.settings import Settings
from tests.support.helpers import add_own_event, outbox
from tests.support.operator_commands import DAY, Run, prepared_outbox, run_outbox, update_times  # noqa: F401  (fixtures)

RETENTION_DAYS = 7


def test_purge_deletes_only_processed_events_past_the_retention(
    run: Run, db: firestore.Client, settings: Settings, prepared: dict[str, Any]
) -> None:
    before = outbox(db, settings)

    code, out, err = run("purge", "--older-than", f"{RETENTION_DAYS}d", "--batch-size", "2")

    assert code == 0
    assert out.splitlines()[0].startswith("3 PROCESSED events processed more than 7d ago")
    assert out.splitlines()[-1] == "deleted 3"
    assert err.splitlines() == [
        "purge [####################----------] 2/3",
        "purge [##############################] 3/3",
    ]  # two batches
    assert outbox(db, settings) == {k: v for k, v in before.items() if not k.startswith("old-")}


def test_purge_dry_run_writes_nothing(
    run: Run, db: firestore.Client, settings: Settings, prepared: dict[str, Any]
) -> None:
    before = update_times(db, settings)
    code, out, _ = run("purge", "--dry-run", "--set-expire-at")
    assert code == 0 and out.splitlines()[-1] == "dry run: nothing written"
    assert "2 PROCESSED events within the retention" in out
    assert update_times(db, settings) == before


def test_purge_takes_its_retention_from_the_environment_and_backfills_expire_at(
    run: Run,
    db: firestore.Client,
    settings: Settings,
    prepared: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OUTBOX_RETENTION_SECONDS", str(5 * 86400))
    before = outbox(db, settings)

    code, out, _ = run("purge", "--set-expire-at")

    assert code == 0 and "deleted 4" in out
    after = outbox(db, settings)
    assert set(before) - set(after) == {"old-0", "old-1", "old-2", "recent"}  # 6 days > 5
    # Stamped only where missing: "stamped" keeps the expireAt it had.
    assert after["stamped"]["expireAt"] == before["stamped"]["expireAt"]
    assert out.splitlines()[-1] == "set expireAt on 0"

    monkeypatch.setenv("OUTBOX_RETENTION_SECONDS", str(30 * 86400))
    add_own_event(db, settings, "fresh", status="PROCESSED", processedAt=prepared["now"] - DAY)
    code, out, _ = run("purge", "--set-expire-at")
    assert code == 0 and out.splitlines()[-1] == "set expireAt on 1"
    fresh = outbox(db, settings)["fresh"]
    assert fresh["expireAt"] == fresh["processedAt"] + 30 * DAY


def test_purge_refuses_a_retention_of_zero(run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OUTBOX_RETENTION_SECONDS", "0")
    code, _, err = run("purge")
    assert code == 2 and "pass --older-than" in err
    assert run("purge", "--older-than", "7 days")[0] == 2  # not a duration
