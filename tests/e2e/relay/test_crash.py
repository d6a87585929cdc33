"""A writer killed at an arbitrary moment leaves no order without its event, nor the reverse."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

from google.cloud import firestore

from firestore_outbox.firestore.settings import Settings

WRITER = textwrap.dedent(
    """
    import itertools, sys
    from firestore_outbox.firestore.settings import Settings
    from firestore_outbox.firestore.client import get_db_client
    from app.services import create_new_order
    from app.uow import FirestoreUnitOfWork

    settings = Settings(project_id=sys.argv[1], emulator_host=sys.argv[2])
    db = get_db_client(settings)
    for n in itertools.count():
        with FirestoreUnitOfWork(db, settings) as uow:
            create_new_order(f"c{n}", [{"productId": "p", "quantity": 1}], uow)
    """
)


def kill_writer_mid_stream(settings: Settings, db: firestore.Client, progress: int) -> None:
    """Run a writer until `progress` more orders exist, then SIGKILL it wherever it is."""
    target = len(db.collection("orders").get()) + progress
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(settings.project_id), str(settings.emulator_host)],
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while len(db.collection("orders").get()) < target:
            assert writer.poll() is None, writer.stderr.read() if writer.stderr else ""
            assert time.monotonic() < deadline, "the writer made no progress"
            time.sleep(0.02)
    finally:
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait()
    assert writer.returncode == -signal.SIGKILL


def read_both(db: firestore.Client) -> tuple[set[str], list[str]]:
    """Orders and events at one snapshot: a commit the killed writer had already sent may
    still land, and two separate reads could fall on either side of it."""

    @firestore.transactional
    def read(transaction: firestore.Transaction) -> tuple[set[str], list[str]]:
        orders = {doc.id for doc in db.collection("orders").get(transaction=transaction)}
        events = db.collection("outbox").get(transaction=transaction)
        return orders, [doc.to_dict()["aggregateId"] for doc in events]

    result: tuple[set[str], list[str]] = read(db.transaction(read_only=True))
    return result


def test_sigkill_mid_stream_leaves_orders_and_events_paired(
    settings: Settings, db: firestore.Client
) -> None:
    # Several kills at different moments: a dual write would be caught in most of them.
    for _ in range(8):
        kill_writer_mid_stream(settings, db, progress=10)
    orders, events = read_both(db)
    assert len(orders) >= 80
    assert sorted(events) == sorted(orders)
