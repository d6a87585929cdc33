"""A re-drive job run by `outbox replay --run` SIGKILLed mid-way resumes from its cursor:
nothing skipped, and only what was sent since the cursor was last written sent again."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from firestore_outbox.consumer.receiver import Received, Receiver, ReceiverAnswer
from firestore_outbox.redrive.reading import candidates
from firestore_outbox.redrive.selection import Selection
from firestore_outbox.redrive.targets import target_for
from tests.support.helpers import relay_environment
from tests.support.redrive import redrive, seed

OUTBOX = shutil.which("outbox") or os.path.join(os.path.dirname(sys.executable), "outbox")
# At 5 a second, eight sends take at least 1.4 s: the runner has written its cursor (once a
# second) before the ninth, however slow the machine.
KILL_AT = 9


def test_a_job_killed_mid_way_resumes_without_skipping(
    db: Any, settings: Any, receiver: Receiver, tmp_path: Path
) -> None:
    seed(db, settings, 12)
    service, config = redrive(db, settings, receiver.url)
    job = service.start(Selection(), target=target_for(None), rate=5.0, created_by="test")
    events = db.collection(settings.outbox_collection)
    order = [
        c.event.event_id for c in candidates(events, job.selection, None) if c.event is not None
    ]
    runner: list[subprocess.Popen[str]] = []
    killed = threading.Event()

    def kill_mid_way(_: Received) -> ReceiverAnswer:
        if len(receiver.received) == KILL_AT and not killed.is_set():
            os.killpg(runner[0].pid, signal.SIGKILL)  # mid-send: the 2xx never reaches it
            killed.set()
        return ReceiverAnswer(200)

    receiver.respond = kill_mid_way
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FIRESTORE_", "RELAY_"))}
    env.update(relay_environment(settings, receiver.url), LOG_LEVEL="WARNING")
    runner.append(
        subprocess.Popen(
            [OUTBOX, "replay", "--run", job.job_id],
            env=env,
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
    )
    runner[0].wait(timeout=120)
    assert runner[0].returncode == -signal.SIGKILL, runner[0].stderr.read()  # type: ignore[union-attr]
    first_run = [str(r.event_id) for r in receiver.received]
    assert first_run == order[:KILL_AT]
    cursor = service.jobs.get(job.job_id).cursor
    resume_from = 0 if cursor is None else order.index(cursor.event_id) + 1
    assert 0 < resume_from < KILL_AT  # the in-flight event was never recorded as passed

    # Its lease (RELAY_LOCK_TIMEOUT_SECONDS, 3 s here) must run out before another runner
    # may take the job: until then the job is refused, never run twice at once.
    deadline = time.monotonic() + 60
    while not (report := service.run(job.job_id, owner="second")).started:
        assert report.stopped.startswith("held by"), report.stopped
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert report.stopped == "done"
    assert report.sent_ids == order[resume_from:]
    assert set(first_run) | set(report.sent_ids) == set(order)  # nothing skipped
    assert config.lock_timeout_seconds == 3.0
