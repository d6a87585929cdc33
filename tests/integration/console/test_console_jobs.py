"""The console's re-drive page against the emulator: a dry run first (nothing written),
then the job, listed, and cancelled; bad input is a 400 naming the field."""

from __future__ import annotations

from typing import Any

import pytest
import requests

from firestore_outbox.redrive.job import JobState
from firestore_outbox.redrive.jobs import JobStore
from firestore_outbox.redrive.service import jobs_collection
from tests.support.console_pages import serving
from tests.support.redrive import seed, update_times

pytestmark = pytest.mark.emulator


def csrf_of(page: str) -> str:
    return page.split('name="csrf" value="', 1)[1].split('"', 1)[0]


def test_a_job_is_started_after_its_dry_run_and_can_be_cancelled(db: Any, settings: Any) -> None:
    seed(db, settings)
    before = update_times(db, settings)
    store = JobStore(db, jobs_collection(settings.outbox_collection), lease_seconds=300, timeout=10)
    with serving(settings) as url:
        assert "No job yet" in requests.get(url + "/jobs", timeout=30).text
        query = {"type": "OrderPaid", "status": "PROCESSED", "rate": "5"}
        dry = requests.get(url + "/jobs/new", params=query, timeout=30)
        assert dry.status_code == 200
        assert "<strong>6</strong> events to send to configured" in dry.text
        assert update_times(db, settings) == before and store.recent() == []
        made = requests.post(
            url + "/jobs/new", data={**query, "by": "ann", "csrf": csrf_of(dry.text)}, timeout=30
        )
        assert made.status_code == 200 and "created: 6 events" in made.text
        [job] = store.recent()
        assert (job.state, job.created_by, job.rate) == (JobState.RUNNING, "ann (console)", 5.0)
        assert job.selection.event_types == ("OrderPaid",)
        listing = requests.get(url + "/jobs", timeout=30).text
        assert job.job_id in listing and "0/6" in listing
        cancelled = requests.post(
            url + "/jobs/move",
            data={"job": job.job_id, "command": "cancel", "csrf": csrf_of(listing)},
            timeout=30,
        )
        assert cancelled.status_code == 200 and "is CANCELLED (final)" in cancelled.text
        assert store.get(job.job_id).state is JobState.CANCELLED
        assert update_times(db, settings) == before  # no outbox document written


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"since": "last week"}, "since must be RFC 3339"),
        ({"status": "DELIVERED"}, "status must be one of"),
        ({"target": "https://u:secret-pw@h/x"}, "target url must carry no user info"),
    ],
)
def test_a_bad_field_is_a_bad_request_naming_it(
    db: Any, settings: Any, query: dict[str, str], message: str
) -> None:
    with serving(settings) as url:
        answer = requests.get(url + "/jobs/new", params=query, timeout=30)
    assert answer.status_code == 400 and message in answer.text
    assert "secret-pw" not in answer.text
