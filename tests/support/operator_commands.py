"""The `outbox` operations commands run in this process against the emulator, and an outbox
prepared with every kind of event an operator meets.

    from tests.support.operator_commands import Run, prepared_outbox, run_outbox  # noqa: F401

(`run_outbox` is the `run` fixture, `prepared_outbox` the `prepared` one.)
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from google.cloud import firestore

from firestore_outbox.cli import main
from firestore_outbox.firestore.settings import Settings
from tests.support.helpers import add_orders, add_own_event, utcnow

DAY = dt.timedelta(days=1)


Run = Callable[..., tuple[int, str, str]]


@pytest.fixture(name="run")
def run_outbox(
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> Run:
    """`outbox ARGS...` in this process: (exit status, stdout, stderr)."""
    monkeypatch.chdir(tmp_path)  # away from any .env file
    monkeypatch.setenv("FIRESTORE_EMULATOR_HOST", str(settings.emulator_host))
    monkeypatch.setenv("FIRESTORE_PROJECT_ID", str(settings.project_id))
    for name in ("OUTBOX_COLLECTION", "ORDERS_COLLECTION", "OUTBOX_RETENTION_SECONDS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RELAY_LOCK_TIMEOUT_SECONDS", "300")

    def outbox_command(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse: --help and usage errors
            code = int(exc.code or 0)
        out, err = capsys.readouterr()
        return code, out, err

    return outbox_command


@pytest.fixture(name="prepared")
def prepared_outbox(db: firestore.Client, settings: Settings) -> dict[str, Any]:
    """An outbox with every kind of event an operator meets, each as the project's own
    producer wrote it (with its partition) and a relay left it."""
    now = utcnow()
    due = add_orders(db, settings, 2)
    failed = "gave up after attempt 5: HTTP 503: busy"
    add_own_event(db, settings, "f-503a", status="FAILED", attempts=5, lastError=failed)
    add_own_event(db, settings, "f-503b", status="FAILED", attempts=5, lastError=failed)
    add_own_event(
        db,
        settings,
        "f-422",
        eventType="PaymentTaken",
        status="FAILED",
        attempts=1,
        lastError="rejected after attempt 1: HTTP 422",
    )
    for n in range(3):
        add_own_event(db, settings, f"old-{n}", status="PROCESSED", processedAt=now - 10 * DAY)
    add_own_event(db, settings, "recent", status="PROCESSED", processedAt=now - 6 * DAY)
    stamped = now - 2 * DAY
    add_own_event(
        db, settings, "stamped", status="PROCESSED", processedAt=stamped, expireAt=stamped + DAY
    )
    hour_ago = now - dt.timedelta(hours=1)
    add_own_event(
        db,
        settings,
        "stuck",
        status="PROCESSING",
        attempts=1,
        updatedAt=hour_ago,
        processingInstanceId="dead-relay",
    )
    add_own_event(db, settings, "leased", status="PROCESSING", attempts=1)
    add_own_event(db, settings, "later", nextAttemptAt=now + dt.timedelta(hours=1))
    return {"due": due, "now": now}


def update_times(db: firestore.Client, settings: Settings) -> dict[str, Any]:
    """Every document of both collections with its update time: any write changes it."""
    return {
        f"{name}/{doc.id}": doc.update_time
        for name in (settings.outbox_collection, settings.orders_collection)
        for doc in db.collection(name).get()
    }
