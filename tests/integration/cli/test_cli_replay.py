"""`outbox replay` on the emulator: a dry run counts and writes nothing, a job sends to a
real local downstream, and `outbox status` and `--list`, `--pause`, `--cancel` see it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.redrive.service import jobs_collection
from tests.support.operator_commands import Run, run_outbox, update_times  # noqa: F401
from tests.support.redrive import seed


def test_a_dry_run_counts_per_type_and_writes_nothing(
    run: Run, db: Any, settings: Any, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOWNSTREAM_SERVICE_URL", receiver.url)
    seed(db, settings)
    before = update_times(db, settings)
    code, out, _ = run("replay", "--dry-run", "--event-type", "OrderPaid", "--rate", "2")
    assert code == 0, out
    assert "6 events to send to configured" in out  # ev-001, 003, 005, 007, 009, 011
    assert "first: ev-001 OrderPaid 2026-11-01T08:01:00+00:00" in out
    assert "last: ev-011 OrderPaid" in out and "dry run: nothing written" in out
    assert update_times(db, settings) == before
    assert list(db.collection(jobs_collection(settings.outbox_collection)).list_documents()) == []
    assert receiver.received == []


def test_a_job_runs_and_is_listed_paused_and_cancelled(
    run: Run, db: Any, settings: Any, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOWNSTREAM_SERVICE_URL", "http://127.0.0.1:9/unused")
    seed(db, settings)
    code, out, _ = run(
        "replay", "--aggregate-id", "b", "--target-url", receiver.url, "--by", "ops-ann", "--yes"
    )
    assert code == 0, out
    job_id = out.split()[1].rstrip(":")
    assert f"job {job_id}: sent 3, rejected 0, skipped 0; stopped: done" in out
    # aggregate b's delivered events (ev-004 is FAILED), in commit order
    assert [str(r.event_id) for r in receiver.received] == ["ev-001", "ev-007", "ev-010"]
    code, out, err = run("status", "--json")
    assert code == 0, err
    [listed] = json.loads(out)["redriveJobs"]
    assert listed["job"] == job_id and listed["state"] == "DONE" and listed["by"] == "ops-ann"
    assert "re-drive jobs" in run("status")[1]

    code, out, _ = run("replay", "--detach", "--yes", "--status", "FAILED")
    detached = out.split()[1].rstrip(":")
    assert run("replay", "--pause", detached)[0] == 0
    assert "PAUSED" in run("replay", "--show", detached)[1]
    code, _, err = run("replay", "--pause", detached)
    assert code != 0 and "is PAUSED: it cannot pause" in err
    assert run("replay", "--cancel", detached)[0] == 0
    code, out, _ = run("replay", "--run", detached)
    assert code == 1 and "not run: the job is CANCELLED" in out
