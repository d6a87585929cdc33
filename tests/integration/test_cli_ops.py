"""The `outbox` operations commands on the emulator, against a prepared outbox: what each
prints, and what it writes (or, for the read-only ones and `--dry-run`, that it writes nothing)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from google.cloud import firestore
from google.cloud.firestore_v1.vector import Vector

from app.cli import COMMANDS, main
from app.config import Settings
from app.receiver import Receiver
from tests.helpers import add_orders, add_raw_event, outbox, utcnow

DAY = dt.timedelta(days=1)
RETENTION_DAYS = 7
Run = Callable[..., tuple[int, str, str]]


@pytest.fixture
def run(
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


@pytest.fixture
def prepared(db: firestore.Client, settings: Settings) -> dict[str, Any]:
    """An outbox with every kind of event an operator meets."""
    now = utcnow()
    due = add_orders(db, settings, 2)
    failed = "gave up after attempt 5: HTTP 503: busy"
    add_raw_event(db, settings, "f-503a", status="FAILED", attempts=5, lastError=failed)
    add_raw_event(db, settings, "f-503b", status="FAILED", attempts=5, lastError=failed)
    add_raw_event(
        db,
        settings,
        "f-422",
        eventType="PaymentTaken",
        status="FAILED",
        attempts=1,
        lastError="rejected after attempt 1: HTTP 422",
    )
    for n in range(3):
        add_raw_event(db, settings, f"old-{n}", status="PROCESSED", processedAt=now - 10 * DAY)
    add_raw_event(db, settings, "recent", status="PROCESSED", processedAt=now - 6 * DAY)
    stamped = now - 2 * DAY
    add_raw_event(
        db, settings, "stamped", status="PROCESSED", processedAt=stamped, expireAt=stamped + DAY
    )
    hour_ago = now - dt.timedelta(hours=1)
    add_raw_event(
        db,
        settings,
        "stuck",
        status="PROCESSING",
        attempts=1,
        updatedAt=hour_ago,
        processingInstanceId="dead-relay",
    )
    add_raw_event(db, settings, "leased", status="PROCESSING", attempts=1)
    add_raw_event(db, settings, "later", nextAttemptAt=now + dt.timedelta(hours=1))
    return {"due": due, "now": now}


def update_times(db: firestore.Client, settings: Settings) -> dict[str, Any]:
    """Every document of both collections with its update time: any write changes it."""
    return {
        f"{name}/{doc.id}": doc.update_time
        for name in (settings.outbox_collection, settings.orders_collection)
        for doc in db.collection(name).get()
    }


def test_every_command_has_help(run: Run) -> None:
    names = {module.__name__.rpartition(".")[2] for module in COMMANDS}
    assert names == {
        "status",
        "inspect",
        "requeue",
        "held",
        "purge",
        "relay",
        "reconcile",
        "demo",
        "receiver",
        "emulator",
        "api",
    }
    code, out, _ = run("--help")
    assert code == 0 and all(name in out for name in names)
    for name in names:
        code, out, _ = run(name, "--help")
        assert code == 0 and out.startswith(f"usage: outbox {name}"), out


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
    assert lines[0].split() == ["events", "status"]
    assert "5  PROCESSED" in out and "2 due now" in out and "1 past their lease" in out
    assert "lag: 55m" in out and "(oldest eligible event stuck)" in out
    assert "     2  gave up after attempt 5: HTTP 503: busy" in out
    assert update_times(db, settings) == before


def test_status_of_an_empty_outbox_has_no_lag(run: Run) -> None:
    code, out, _ = run("status", "--json")
    assert code == 0 and json.loads(out)["lagSeconds"] is None
    assert "lag: none" in run("status")[1]


def test_inspect_prints_the_whole_document(
    run: Run, db: firestore.Client, settings: Settings, prepared: dict[str, Any]
) -> None:
    code, out, _ = run("inspect", "f-422")

    assert code == 0
    shown = json.loads(out)
    stored = outbox(db, settings)["f-422"]
    assert set(shown) == set(stored) | {"_createTime", "_updateTime"}
    assert shown["lastError"] == "rejected after attempt 1: HTTP 422"
    assert shown["payload"] == stored["payload"] and shown["eventType"] == "PaymentTaken"
    assert shown["createdAt"].endswith("Z") and shown["processedAt"] is None

    assert run("inspect", "no-such-event")[0:3:2] == (
        1,
        "error: no event no-such-event in outbox\n",
    )
    code, _, err = run("inspect", "a/b")
    assert code == 2 and "EVENT_ID" in err


def test_requeue_dry_run_counts_and_writes_nothing(
    run: Run, db: firestore.Client, settings: Settings, prepared: dict[str, Any]
) -> None:
    before = update_times(db, settings)

    code, out, _ = run("requeue", "--all", "--dry-run")

    assert code == 0
    assert out.splitlines() == [
        "3 FAILED events to requeue",
        "eventId  attempts  why: FAILED with lastError",
        "f-422    1         rejected after attempt 1: HTTP 422",
        "f-503a   5         gave up after attempt 5: HTTP 503: busy",
        "f-503b   5         gave up after attempt 5: HTTP 503: busy",
        "dry run: nothing written",
    ]
    # The list is bounded; the count still says how many.
    code, out, _ = run("requeue", "--all", "--dry-run", "--list", "1")
    assert out.splitlines()[2:] == [
        "f-422    1         rejected after attempt 1: HTTP 422",
        "... and 2 more",
        "dry run: nothing written",
    ]
    assert update_times(db, settings) == before


def test_requeue_by_id_resets_only_those_events(
    run: Run, db: firestore.Client, settings: Settings, prepared: dict[str, Any]
) -> None:
    before = outbox(db, settings)

    code, out, err = run("requeue", "f-503a", "recent", "nope")

    assert code == 0
    assert out.splitlines() == [
        "skipped recent: status is PROCESSED",
        "skipped nope: no such event",
        "1 FAILED events to requeue",
        "requeued 1",
    ]
    assert "requeue [" in err  # the progress bar
    after = outbox(db, settings)
    event = after.pop("f-503a")
    assert (event["status"], event["attempts"], event["requeues"]) == ("PENDING", 0, 1)
    assert event["lastError"] == before["f-503a"]["lastError"]  # why it had failed stays
    assert event["nextAttemptAt"] <= utcnow()  # due at once
    assert after == {k: v for k, v in before.items() if k != "f-503a"}


def test_requeue_by_event_type_and_all(
    run: Run, db: firestore.Client, settings: Settings, prepared: dict[str, Any]
) -> None:
    code, out, _ = run("requeue", "--event-type", "PaymentTaken")
    assert code == 0 and out.splitlines() == ["1 FAILED events to requeue", "requeued 1"]
    statuses = {k: v["status"] for k, v in outbox(db, settings).items()}
    assert (statuses["f-422"], statuses["f-503a"], statuses["f-503b"]) == (
        "PENDING",
        "FAILED",
        "FAILED",
    )

    code, out, _ = run("requeue", "--all")
    assert code == 0 and out.splitlines() == ["2 FAILED events to requeue", "requeued 2"]
    assert "FAILED" not in {v["status"] for v in outbox(db, settings).values()}
    assert run("requeue", "--all")[1] == "0 FAILED events to requeue\n"


def test_requeue_needs_a_selection(run: Run) -> None:
    code, _, err = run("requeue")
    assert code == 2 and "one of the arguments EVENT_ID --event-type --all is required" in err


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
    add_raw_event(db, settings, "fresh", status="PROCESSED", processedAt=prepared["now"] - DAY)
    code, out, _ = run("purge", "--set-expire-at")
    assert code == 0 and out.splitlines()[-1] == "set expireAt on 1"
    fresh = outbox(db, settings)["fresh"]
    assert fresh["expireAt"] == fresh["processedAt"] + 30 * DAY


def test_purge_refuses_a_retention_of_zero(run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OUTBOX_RETENTION_SECONDS", "0")
    code, _, err = run("purge")
    assert code == 2 and "pass --older-than" in err
    assert run("purge", "--older-than", "7 days")[0] == 2  # not a duration


def test_relay_delivers_due_events_and_stamps_expire_at(
    run: Run,
    db: firestore.Client,
    settings: Settings,
    receiver: Receiver,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    event_ids = add_orders(db, settings, 3)
    monkeypatch.setenv("DOWNSTREAM_SERVICE_URL", receiver.url)
    monkeypatch.setenv("OUTBOX_RETENTION_SECONDS", "3600")

    code, out, _ = run("relay")

    assert code == 0
    summary = json.loads(out)
    assert (summary["status"], summary["processed"]) == ("ok", 3)
    assert sorted(r.event_id for r in receiver.received) == event_ids
    for event in outbox(db, settings).values():
        lag = event["expireAt"] - event["processedAt"]
        assert event["status"] == "PROCESSED"
        assert abs(lag - dt.timedelta(hours=1)) < dt.timedelta(seconds=5), lag


def test_reconcile_reports_each_kind_of_anomaly(
    run: Run, db: firestore.Client, settings: Settings
) -> None:
    add_orders(db, settings, 2)  # healthy: an order and its event each
    # Taken before "lonely" exists: an auto id may sort after it.
    order_id = next(iter(db.collection(settings.orders_collection).get())).id
    db.collection(settings.orders_collection).document("lonely").set(
        {"customerId": "c", "items": [], "status": "CREATED", "createdAt": utcnow()}
    )
    add_raw_event(db, settings, "orphan", aggregateId="deleted-order")
    add_raw_event(db, settings, "foreign", aggregateType="payment", aggregateId="p-1")
    hour_ago = utcnow() - dt.timedelta(hours=1)
    add_raw_event(
        db,
        settings,
        "stuck",
        status="PROCESSING",
        updatedAt=hour_ago,
        aggregateId=order_id,
        processingInstanceId="dead-relay",
        attempts=2,
    )
    before = update_times(db, settings)

    code, out, _ = run("reconcile", "--json")

    assert code == 1
    found = json.loads(out)
    assert found["counts"] == {
        "stuck": 1,
        "ordersWithoutEvent": 1,
        "eventsWithoutOrder": 1,
        "unscheduled": 0,
    }
    assert [e["eventId"] for e in found["stuckEvents"]] == ["stuck"]
    assert found["stuckEvents"][0]["processingInstanceId"] == "dead-relay"
    assert found["ordersWithoutEvent"] == ["lonely"]
    assert found["eventsWithoutOrder"] == [{"eventId": "orphan", "orderId": "deleted-order"}]

    code, out, _ = run("reconcile")
    assert code == 1
    assert "PROCESSING past their lease: 1" in out and "stuck    dead-relay" in out
    assert "orders with no outbox event: 1" in out and "lonely" in out
    assert "events whose order does not exist: 1" in out and "orphan   deleted-order" in out
    assert update_times(db, settings) == before


def test_reconcile_of_a_healthy_outbox_exits_0(
    run: Run, db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    add_orders(db, settings, 3)
    code, out, _ = run("reconcile", "--json")
    assert code == 0 and json.loads(out)["counts"] == dict.fromkeys(
        ("stuck", "ordersWithoutEvent", "eventsWithoutOrder", "unscheduled"), 0
    )


def test_reconcile_looks_only_within_its_window(
    run: Run, db: firestore.Client, settings: Settings
) -> None:
    old = utcnow() - 3 * DAY
    add_raw_event(db, settings, "old-orphan", aggregateId="gone", createdAt=old)
    assert run("reconcile", "--since", "1d")[0] == 0
    code, out, _ = run("reconcile", "--since", "4d", "--json")
    assert code == 1 and json.loads(out)["eventsWithoutOrder"][0]["eventId"] == "old-orphan"


def test_inspect_prints_any_firestore_value_even_nan(
    run: Run, db: firestore.Client, settings: Settings
) -> None:
    nan, inf = float("nan"), float("inf")
    add_raw_event(
        db,
        settings,
        "odd",
        status="FAILED",
        attempts=nan,
        lastError=None,
        payload={
            "price": nan,
            "limits": [inf, -inf, 1.5],
            "where": firestore.GeoPoint(52.5, 13.4),
            "raw": b"\x00\xff",
            "order": db.document("orders/o-1"),
        },
        embedding=Vector([0.5, 2.0]),  # Firestore keeps vectors only as top-level fields
    )

    code, out, err = run("inspect", "odd")

    assert code == 0, err
    shown = json.loads(out)
    assert shown["attempts"] == "NaN"
    assert shown["payload"]["price"] == "NaN"
    assert shown["payload"]["limits"] == ["Infinity", "-Infinity", 1.5]
    assert shown["payload"]["where"] == {"latitude": 52.5, "longitude": 13.4}
    assert shown["payload"]["order"] == "orders/o-1"
    assert shown["embedding"] == [0.5, 2.0]
