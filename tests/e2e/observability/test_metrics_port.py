"""`--metrics-port`: `outbox relay --follow` and `outbox receiver`, as real processes, serve
their OpenTelemetry metrics in Prometheus' text format."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import requests
from google.cloud import firestore

from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.testing.emulator import free_port
from tests.e2e.relay.test_relay_processes import OUTBOX, start_relay
from tests.support.helpers import add_orders, relay_environment


def scrape_until(port: int, done: Callable[[str], bool], timeout: float = 30.0) -> str:
    """The metrics page once `done(page)`, polled; the last page seen if never."""
    deadline, page = time.monotonic() + timeout, ""
    while time.monotonic() < deadline:
        try:
            page = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
        except requests.ConnectionError:
            page = ""  # not listening yet
        if done(page):
            break
        time.sleep(0.2)
    return page


def test_the_follower_serves_delivery_counters_and_backlog_gauges(
    db: firestore.Client, settings: Settings, tmp_path: Path
) -> None:
    port = free_port()
    with Receiver() as receiver:
        follower = start_relay(
            relay_environment(settings, receiver.url),
            tmp_path,
            "--follow",
            f"--metrics-port={port}",
        )
        try:
            add_orders(db, settings, 2)
            assert len(receiver.wait_for(2, timeout=30)) == 2
            # One scrape observes each instrument in turn: the counter can be read before an
            # attempt's record and the backlog (a Firestore query) after its settle. Polled
            # until the counter has caught up too.
            settled = (
                'outbox_backlog{status="PROCESSED"} 2.0',
                "outbox_oldest_due_age_seconds 0.0",
                'outcome="delivered"} 2.0',
            )
            page = scrape_until(port, lambda p: all(line in p for line in settled))
        finally:
            follower.send_signal(signal.SIGTERM)
            _, stderr = follower.communicate(timeout=30)
    assert follower.returncode == 0, stderr
    assert 'outbox_backlog{status="PROCESSED"} 2.0' in page
    assert 'outbox_backlog{status="PENDING"} 0.0' in page
    assert "outbox_oldest_due_age_seconds 0.0" in page
    [delivered] = [line for line in page.splitlines() if line.startswith("outbox_deliveries_total")]
    assert 'outcome="delivered"' in delivered and 'messaging_system="http"' in delivered
    assert delivered.endswith(" 2.0")
    assert "messaging_client_operation_duration_seconds_count" in page


def test_the_receiver_serves_its_verdicts(settings: Settings, tmp_path: Path) -> None:
    port, receiver_port = free_port(), free_port()
    env = {
        **relay_environment(settings, "http://127.0.0.1:9/unused"),
        "PATH": "/usr/bin:/bin",
        "LOG_LEVEL": "WARNING",
        # The reference consumer (app.order_counter) comes from this checkout, run elsewhere.
        "PYTHONPATH": str(Path(__file__).resolve().parents[3]),
    }
    process = subprocess.Popen(
        [OUTBOX, "receiver", "--no-verify", f"--port={receiver_port}", f"--metrics-port={port}"],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None and "listening" in process.stdout.readline()
        answer = requests.post(
            f"http://127.0.0.1:{receiver_port}/events", data=b"not a cloudevent", timeout=10
        )
        assert answer.status_code == 400
        page = scrape_until(port, lambda p: 'verdict="rejected"' in p)
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=30)
    [line] = [line for line in page.splitlines() if line.startswith("inbox_deliveries_total")]
    assert 'messaging_consumer_group_name="order-counter"' in line and line.endswith(" 1.0")
