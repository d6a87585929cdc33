"""A reference receiver SIGKILLed in the middle of applying a delivery, on an emulator of its
own (before the fix, the dead consumer's transaction kept the inbox record locked for a minute,
which would have blocked the next tests' data reset).

Before: the receiver applied each delivery in a Firestore transaction that read the inbox
record, and the killed one's read lock outlived it by 60 s: every redelivery meanwhile was
aborted (`Transaction lock timeout`) and answered 503, and redeliveries retrying together
then locked each other out for good (the drill's event that failed all its 100 attempts).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
from google.cloud import firestore

from app.order_counter import OrderCounter, ReceiverConfig
from firestore_outbox.consumer.receiver import Received
from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.testing.emulator import FirestoreEmulator
from tests.support.inbox_effects import count, in_parallel

HEADERS = {
    "content-type": "application/json",
    "ce-specversion": "1.0",
    "ce-id": "evt-killed",
    "ce-type": "OrderCreated",
    "ce-source": "//outbox/test",
    "ce-time": "2026-11-22T12:00:00Z",
}
BODY = json.dumps({"customerId": "c-1"}).encode()
CONFIG = ReceiverConfig(verify_signatures=False)

# The receiver's own code, stopped inside its effect (after the inbox record was read, before
# anything commits) until it is killed there.
KILLED_RECEIVER = f"""
import sys, time
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.firestore.client import get_db_client
from app.order_counter import OrderCounter, ReceiverConfig
from firestore_outbox.consumer.receiver import Received

count = OrderCounter._count

def count_then_hang(self, *args):
    count(self, *args)
    print("inside", flush=True)
    time.sleep(600)

OrderCounter._count = count_then_hang
db = get_db_client(Settings(project_id="killed", emulator_host=sys.argv[1]))
OrderCounter(db, ReceiverConfig(verify_signatures=False))(
    Received("/events", {HEADERS!r}, {BODY!r})
)
"""


@pytest.fixture
def own_emulator() -> Iterator[str]:
    with FirestoreEmulator() as emulator:
        yield emulator.host_port


def deliver(db: firestore.Client) -> dict[str, object]:
    answer = OrderCounter(db, CONFIG)(Received("/events", HEADERS, BODY))
    return {"code": answer.status, **json.loads(answer.body)}


def test_a_receiver_killed_while_applying_holds_no_redelivery_back(own_emulator: str) -> None:
    db = get_db_client(Settings(project_id="killed", emulator_host=own_emulator))
    env = {k: v for k, v in os.environ.items() if not k.startswith("FIRESTORE_")}
    killed = subprocess.Popen(
        [sys.executable, "-c", KILLED_RECEIVER, own_emulator],
        stdout=subprocess.PIPE,
        env=env,
    )
    try:
        assert killed.stdout is not None
        assert killed.stdout.readline() == b"inside\n"
    finally:
        killed.kill()
        killed.wait()
    # The very next delivery applies it, and the ones after are duplicates.
    assert deliver(db) == {"code": 200, "status": "applied", "eventId": "evt-killed"}
    assert deliver(db) == {"code": 200, "status": "duplicate", "eventId": "evt-killed"}
    assert count(db) == 1


def test_concurrent_redeliveries_through_the_batch_apply_once(own_emulator: str) -> None:
    db = get_db_client(Settings(project_id="killed", emulator_host=own_emulator))
    answers = in_parallel(8, lambda: deliver(db))
    statuses = sorted(str(a["status"]) for a in answers)
    assert statuses == ["applied"] + ["duplicate"] * 7, answers
    assert count(db) == 1
