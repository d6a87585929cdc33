"""The console in this process on a free loopback port, over an outbox prepared with what an
operator meets: PENDING, FAILED (two types), a held aggregate, a delivered event, a partition
lease, and a FAILED event whose fields carry markup and a secret.

    from tests.support.console_pages import in_process_console, prepared_console_outbox  # noqa:
    F401

(the `console_url` and `console_outbox` fixtures).
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from google.cloud import firestore

from firestore_outbox.cli.output import ops_client
from firestore_outbox.console import make_console
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.idempotency.server import create_server
from tests.support.helpers import add_own_event, add_raw_event, utcnow

SECRET = "whsec-console-test-secret-0123456789"
XSS = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">'
PARTITIONS = "outbox_partitions"
# The timer never fires in a test: a test refreshes the overview itself (outboxRefresh()).
NEVER = 3600.0


@pytest.fixture(name="console_outbox")
def prepared_console_outbox(db: firestore.Client, settings: Settings) -> dict[str, Any]:
    """The prepared outbox; returns what it holds by kind."""
    now = utcnow()
    for n in range(3):
        add_raw_event(db, settings, f"pending-{n}", nextAttemptAt=now - dt.timedelta(minutes=2))
    # What a relay settled has its partition (the commands and the console ask by partition).
    failed = "gave up after attempt 5: HTTP 503: busy"
    for n in range(2):
        add_own_event(db, settings, f"f-503-{n}", status="FAILED", attempts=5, lastError=failed)
    add_own_event(
        db,
        settings,
        "f-422",
        eventType="PaymentTaken",
        aggregateId="payment-7",
        status="FAILED",
        attempts=1,
        lastError="rejected after attempt 1: HTTP 422",
    )
    add_own_event(
        db,
        settings,
        "held-head",
        aggregateId="order-held",
        status="FAILED",
        attempts=5,
        held=True,
        lastError="gave up after attempt 5: HTTP 500",
    )
    add_own_event(db, settings, "held-later", aggregateId="order-held")
    add_own_event(
        db,
        settings,
        "xss",
        eventType=XSS,
        status="FAILED",
        attempts=1,
        payload={"note": XSS, "key": SECRET},
        lastError=f"rejected: {XSS}",
    )
    add_own_event(db, settings, "delivered", status="PROCESSED", processedAt=now)
    db.collection(PARTITIONS).document("3").set(
        {
            "partition": 3,
            "holder": "relay-7f3a",
            "expiresAt": now + dt.timedelta(minutes=5),
            "updatedAt": firestore.SERVER_TIMESTAMP,
        }
    )
    return {
        "counts": {"PENDING": 4, "PROCESSING": 0, "PROCESSED": 1, "FAILED": 5},
        "failed": ["f-422", "f-503-0", "f-503-1", "held-head", "xss"],
    }


@pytest.fixture(name="console_url")
def in_process_console(settings: Settings, console_outbox: dict[str, Any]) -> Iterator[str]:
    """The console serving the prepared outbox on 127.0.0.1 (no token)."""
    with serving(settings) as url:
        yield url


@contextmanager
def serving(
    settings: Settings, *, token: str | None = None, host: str = "127.0.0.1"
) -> Iterator[str]:
    """The console on a free port of `host`; yields its loopback URL."""
    app = make_console(
        ops_client(settings),
        settings,
        token=token,
        secrets=[SECRET],
        partition_collection=PARTITIONS,
        refresh_seconds=NEVER,
    )
    server = create_server(app, host, 0, 4, max_body_bytes=65536)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.effective_port}"
    finally:
        server.close()
        thread.join(timeout=10)
