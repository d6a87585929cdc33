"""`outbox replay` on the emulator: a dry run counts and writes nothing, a job sends to a
real local downstream, and `outbox status` and `--list`, `--pause`, `--cancel` see it;
`--json` prints one document, a run stopped by a failing consumer exits 3, a budget that fits
no attempt and a selection of nothing are refused with nothing written."""

from __future__ import annotations

import json
from typing import Any

import pytest

from firestore_outbox.cli.replay import EXIT_STOPPED_SHORT
from firestore_outbox.consumer.receiver import Receiver, ReceiverAnswer
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


def jobs(db: Any, settings: Any) -> list[Any]:
    return list(db.collection(jobs_collection(settings.outbox_collection)).list_documents())


def test_json_is_one_document_and_a_run_stopped_by_a_failing_consumer_exits_3(
    run: Run, db: Any, settings: Any, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOWNSTREAM_SERVICE_URL", receiver.url)
    seed(db, settings)
    code, out, _ = run("replay", "--dry-run", "--json", "--event-type", "OrderPaid")
    assert code == 0
    preview = json.loads(out)  # the whole of stdout is one document
    assert preview["dryRun"] is True and preview["count"] == 6
    code, out, _ = run("replay", "--json", "--yes", "--aggregate-id", "b")
    assert code == 0
    done = json.loads(out)
    assert done["run"]["stopped"] == "done" and done["run"]["sent"] == 3
    assert done["job"]["state"] == "RUNNING"  # as created; the run took it to DONE
    receiver.respond = lambda _: ReceiverAnswer(503)
    code, out, _ = run("replay", "--json", "--yes", "--aggregate-id", "a")
    assert code == EXIT_STOPPED_SHORT
    assert json.loads(out)["run"]["stopped"] == "retry"
    code, out, _ = run("replay", "--run", json.loads(out)["job"]["job"], "--json")
    assert code == EXIT_STOPPED_SHORT and json.loads(out)["stopped"] == "retry"


def test_a_budget_that_fits_no_attempt_and_a_selection_of_nothing_are_refused(
    run: Run, db: Any, settings: Any, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOWNSTREAM_SERVICE_URL", receiver.url)
    seed(db, settings)
    code, _, err = run("replay", "--yes", "--budget", "1s")
    assert code == 2 and "--budget leaves 1 s, less than one attempt needs" in err
    code, _, err = run("replay", "--yes", "--event-type", "NoSuchType")
    assert code == 2 and "no event is selected" in err and "no job written" in err
    code, out, _ = run("replay", "--dry-run", "--event-type", "NoSuchType")
    assert code == 0 and "nothing selected: a job of this selection is refused" in out
    assert jobs(db, settings) == [] and receiver.received == []
