"""Timer invocations of the relay handler run a re-drive job in the time their live run
leaves, each within its budget, until the job is done: no long-running process needed."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.nudge.message import NUDGE_TYPE
from firestore_outbox.redrive.selection import Selection
from firestore_outbox.redrive.targets import target_for
from function_compute.relay_handler import handler
from tests.support.fc_invocation import (
    TIMER_EVENT,
    clean_environment,  # noqa: F401  (the `environment` fixture)
    fc_context,
    use,
)
from tests.support.helpers import relay_environment
from tests.support.redrive import redrive, seed


@pytest.fixture(name="service")
def deployed(
    db: Any,
    settings: Any,
    receiver: Receiver,
    environment: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> Any:
    """The relay function's environment, a seeded outbox, and its re-drive jobs."""
    use(monkeypatch, relay_environment(settings, receiver.url))
    seed(db, settings)
    return redrive(db, settings, receiver.url)[0]


def test_timer_invocations_run_a_job_piece_by_piece_within_their_budget(
    service: Any, receiver: Receiver
) -> None:
    # 2 a second: a 9 s function (3 s of budget, less an attempt's 1.5 s) sends a few each time.
    job = service.start(Selection(), target=target_for(None), rate=2.0, created_by="ops")
    runs = []
    for n in range(30):
        summary = handler(TIMER_EVENT, fc_context(f"req-{n}", timeout=9))
        assert summary["status"] == "ok"
        runs.extend(summary["redrive"])
        if runs and runs[-1]["stopped"] == "done":
            break
    assert runs[0]["job"] == job.job_id and runs[0]["stopped"] == "budget"
    assert 0 < runs[0]["sent"] < 11
    assert runs[-1]["stopped"] == "done" and len(runs) > 1
    assert sum(run["sent"] for run in runs) == 11
    counted = Counter(str(r.event_id) for r in receiver.received)
    assert len(counted) == 11 and set(counted.values()) == {1}  # each once, none skipped
    assert service.jobs.get(job.job_id).counts["sent"] == 11


def test_a_nudged_invocation_leaves_jobs_to_the_timer(service: Any, receiver: Receiver) -> None:
    service.start(Selection(), target=target_for(None), rate=100.0, created_by="ops")
    nudge = {"type": NUDGE_TYPE, "data": {"partitions": [0]}}
    summary = handler(nudge, fc_context("req-nudge"))
    assert "redrive" not in summary and receiver.received == []
