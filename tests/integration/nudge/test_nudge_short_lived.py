"""A short-lived producer with `OUTBOX_NUDGE=process` delivers its event before it exits when
it waits for its nudger, as the fast-path page's example does: that example, run as written in
a process of its own, against the emulator and a local downstream."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from google.cloud import firestore

from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.settings import Settings
from tests.support.helpers import outbox, relay_environment

ROOT = Path(__file__).resolve().parents[3]


def documented_example() -> str:
    page = (ROOT / "docs" / "concepts" / "fast-path.md").read_text()
    [example] = [b for b in re.findall(r"```python\n(.*?)```", page, re.S) if "wait_idle" in b]
    return example


def test_the_documented_short_lived_producer_delivers_its_event_before_it_exits(
    db: firestore.Client, settings: Settings, receiver: Receiver, tmp_path: Path
) -> None:
    env = relay_environment(settings, receiver.url, OUTBOX_NUDGE="process")
    script = documented_example() + "\nprint('waited', nudger is not None)\n"

    done = subprocess.run(
        [sys.executable, "-c", script],
        env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(ROOT), **env},
        cwd=tmp_path,  # no .env file here
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "waited True"
    [event] = outbox(db, settings).values()
    assert event["status"] == "PROCESSED" and event["aggregateId"] == "inv-1"
    assert [r.event_id for r in receiver.received] == [event["eventId"]]
