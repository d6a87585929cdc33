"""The overview's health panel lists the re-drive jobs under way (the spot left for them):
a running job with its progress, and none once it is cancelled."""

from __future__ import annotations

import requests
from google.cloud import firestore

from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.redrive.selection import Selection
from firestore_outbox.redrive.targets import target_for
from tests.support.console_pages import serving
from tests.support.redrive import redrive, seed


def test_the_health_panel_lists_a_running_job_and_not_a_cancelled_one(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    seed(db, settings, 4)
    service, _ = redrive(db, settings, receiver.url)
    job = service.start(Selection(), target=target_for(None), rate=1.0, created_by="test")
    with serving(settings) as url:
        running = requests.get(f"{url}/live", timeout=30).text
        service.jobs.move(job.job_id, "cancel")
        cancelled = requests.get(f"{url}/live", timeout=30).text
    [line] = [x for x in running.split("<p") if "id=redrive-jobs" in x]
    assert job.job_id in line and "running" in line.lower()
    assert job.job_id not in cancelled and "No re-drive job under way" in cancelled
