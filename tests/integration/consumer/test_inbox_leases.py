"""The inbox's leases on the real emulator: a crashed consumer's record is taken over after its
lease, an effect that outlives its lease is told so, and Firestore's clock times them."""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from google.cloud import firestore

from firestore_outbox.consumer.inbox import Inbox, LeaseLost, Verdict
from firestore_outbox.firestore.settings import Settings
from tests.support.inbox_effects import SOURCE

ROOT = Path(__file__).resolve().parents[3]


CRASHING_CONSUMER = """
import os, sys, time
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.consumer.inbox import Inbox

settings = Settings(project_id=sys.argv[1], emulator_host=sys.argv[2])
inbox = Inbox(get_db_client(settings), "mailer", lease_seconds=float(sys.argv[3]))

def send():
    print("effect started", flush=True)
    time.sleep(60)  # SIGKILLed here

inbox.process("{source}", "e-1", send)
"""


def test_a_crashed_consumers_record_is_taken_over_after_its_lease(
    db: firestore.Client, settings: Settings
) -> None:
    lease = 2.0
    script = textwrap.dedent(CRASHING_CONSUMER).replace("{source}", SOURCE)
    consumer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            script,
            str(settings.project_id),
            str(settings.emulator_host),
            str(lease),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert consumer.stdout is not None
    assert consumer.stdout.readline().strip() == "effect started"
    os.kill(consumer.pid, signal.SIGKILL)
    consumer.wait(timeout=10)

    inbox = Inbox(db, "mailer", lease_seconds=lease)
    early = inbox.process(SOURCE, "e-1", lambda: "sent")
    assert early.verdict is Verdict.IN_PROGRESS  # the lease is still live
    assert early.retry_after is not None and 0 < early.retry_after <= lease
    time.sleep(early.retry_after + 0.1)
    later = inbox.process(SOURCE, "e-1", lambda: "sent")
    assert (later.verdict, later.value, later.attempts) == (Verdict.APPLIED, "sent", 2)
    assert inbox.get(SOURCE, "e-1").get("status") == "SUCCEEDED"


def test_an_effect_that_outlives_its_lease_is_told_so(db: firestore.Client) -> None:
    inbox = Inbox(db, "mailer", lease_seconds=0.5)
    taken_over = []

    def slow() -> None:
        time.sleep(0.7)
        taken_over.append(inbox.process(SOURCE, "e-1", lambda: "second"))

    with pytest.raises(LeaseLost, match="lease expired before the effect finished"):
        inbox.process(SOURCE, "e-1", slow)
    assert taken_over[0].verdict is Verdict.APPLIED
    assert inbox.get(SOURCE, "e-1").get("status") == "SUCCEEDED"


def test_leases_are_timed_by_firestore_not_by_a_skewed_consumer_clock(
    db: firestore.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    inbox = Inbox(db, "mailer", lease_seconds=30)
    inbox.record(SOURCE, "e-1").create(inbox._records.leased(SOURCE, "e-1", 1, new=True))
    ahead = dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=1)
    monkeypatch.setattr("firestore_outbox.consumer.inbox.records._utcnow", lambda: ahead)
    result = inbox.process(SOURCE, "e-1", lambda: "sent")
    assert result.verdict is Verdict.IN_PROGRESS  # an hour-fast clock does not expire it
