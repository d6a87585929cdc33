"""The `outbox demo` console script, run as a user would."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from typing import Any

import requests
from google.cloud import firestore

from app.services import create_new_order
from app.uow import FirestoreUnitOfWork
from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.settings import Settings
from tests.support.helpers import make_relay

OUTBOX = shutil.which("outbox") or os.path.join(os.path.dirname(sys.executable), "outbox")


def run_demo(env_overrides: dict[str, str | None], *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("FIRESTORE_", "ORDERS_", "OUTBOX_", "RELAY_", "DOWNSTREAM_"))
    }
    env.update({k: v for k, v in env_overrides.items() if v is not None})
    return subprocess.run(
        [OUTBOX, "demo", *args], env=env, capture_output=True, text=True, timeout=180, check=False
    )


def test_demo_on_a_running_emulator_writes_two_orders_and_relays_their_events(
    settings: Settings, db: firestore.Client
) -> None:
    result = run_demo(
        {
            "FIRESTORE_EMULATOR_HOST": settings.emulator_host,
            "FIRESTORE_PROJECT_ID": settings.project_id,
            "LOG_LEVEL": "WARNING",
        }
    )
    assert result.returncode == 0, result.stderr
    assert "replayed=True" in result.stdout
    assert "IdempotencyConflict" in result.stdout and "InvalidOrder" in result.stdout
    prefix = demo_prefix(result.stdout)
    orders = {doc.id: doc.to_dict() for doc in db.collection(f"{prefix}-orders").get()}
    events = [doc.to_dict() for doc in db.collection(f"{prefix}-outbox").get()]
    assert len(orders) == 3  # two delivered by the timer, the last by a nudge
    assert sorted(e["aggregateId"] for e in events) == sorted(orders)
    assert {(e["status"], e["attempts"]) for e in events} == {("PROCESSED", 1)}
    for order_id in orders:
        assert order_id in result.stdout
    [nudged] = [k for k, o in orders.items() if o["customerId"] == "customer-8"]
    assert re.search(rf"order {nudged}: delivered \d+ ms after its commit returned", result.stdout)
    for event in events:
        if event["aggregateId"] != nudged:
            assert f"received OrderCreated ce-id={event['eventId']}" in result.stdout
    assert "status=ok processed=2 failed=0" in result.stdout
    assert "the next timer run finds nothing due: processed=0" in result.stdout
    # The reference receiver verified the signatures and counted each order once.
    assert result.stdout.count("webhook-signature: v1,") == 2
    assert f"{prefix}-order_counts/customer-7: orders=2" in result.stdout
    inbox = db.collection(f"{prefix}-inbox").get()
    assert {r.get("status") for r in inbox} == {"SUCCEEDED"}
    assert '(a relay crashed before settling): {"status": "duplicate"' in result.stdout
    assert "body altered: HTTP 401" in result.stdout


def test_demo_twice_on_a_shared_emulator_leaves_the_users_data_alone(
    settings: Settings, db: firestore.Client, receiver: Receiver
) -> None:
    # The user's relay has run on the default outbox: its partition leases, lease-mode record
    # and heartbeat are in outbox_partitions, outbox_partitions_mode and outbox_health.
    relay = make_relay(db, settings, receiver.url)
    with FirestoreUnitOfWork(db, settings) as uow:
        create_new_order("user-0", [{"productId": "sku-user", "quantity": 1}], uow)
    assert relay.run()["processed"] == 1
    mine = set(relay.collections.names().values()) - {"outbox_redrive"} | {"orders"}
    assert {c.id for c in db.collections()} == mine
    relays_before = _documents(db, mine - {"orders", "outbox"})
    # The user's own data in the default collections: an order and its event, still PENDING.
    with FirestoreUnitOfWork(db, settings) as uow:
        order_id = create_new_order("user-1", [{"productId": "sku-user", "quantity": 3}], uow)
    [event] = [e for e in db.collection("outbox").get() if e.get("status") == "PENDING"]
    before = _snapshots(db, order_id, event.id)
    assert before["outbox"].get("status") == "PENDING"

    env = {
        "FIRESTORE_EMULATOR_HOST": settings.emulator_host,
        "FIRESTORE_PROJECT_ID": settings.project_id,
    }
    runs = [run_demo(env) for _ in range(2)]

    for result in runs:
        assert result.returncode == 0, result.stdout + result.stderr
        assert json_lines(result.stdout) == []
        # Quiet by default: only warnings (the altered body the demo sends is refused) remain.
        assert {line["level"] for line in json_lines(result.stderr)} <= {"WARNING"}
        assert "status=ok processed=2 failed=0" in result.stdout
        assert "replayed=True" in result.stdout
    assert demo_prefix(runs[0].stdout) != demo_prefix(runs[1].stdout)
    after = _snapshots(db, order_id, event.id)
    for name, snapshot in after.items():
        assert snapshot.to_dict() == before[name].to_dict(), name
        assert snapshot.update_time == before[name].update_time, name
    assert after["outbox"].get("status") == "PENDING"
    assert len(db.collection("orders").get()) == 2 and len(db.collection("outbox").get()) == 2
    assert db.collection("inbox").get() == [] and db.collection("order_counts").get() == []
    # The relay's own collections are as it left them: no lease claimed, no heartbeat written.
    assert _documents(db, mine - {"orders", "outbox"}) == relays_before
    prefixes = tuple(f"{demo_prefix(r.stdout)}-" for r in runs)
    assert {c.id for c in db.collections() if not c.id.startswith(prefixes)} == mine


def test_demo_verbose_shows_the_log_lines_on_stderr_only(settings: Settings) -> None:
    env = {
        "FIRESTORE_EMULATOR_HOST": settings.emulator_host,
        "FIRESTORE_PROJECT_ID": settings.project_id,
    }
    result = run_demo(env, "--verbose")
    assert result.returncode == 0, result.stderr
    assert json_lines(result.stdout) == []
    assert "relay.summary" in {line.get("event") for line in json_lines(result.stderr)}


def demo_prefix(stdout: str) -> str:
    """The collection prefix the demo announces for its run."""
    (line,) = [line for line in stdout.splitlines() if "writes only to the collections" in line]
    return line.rsplit(" ", 1)[1].removesuffix("-*")


def json_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def _documents(db: firestore.Client, collections: set[str]) -> dict[str, Any]:
    """Every document of `collections`: its data and update time, by path."""
    return {
        doc.reference.path: (doc.to_dict(), doc.update_time)
        for name in collections
        for doc in db.collection(name).get()
    }


def _snapshots(db: firestore.Client, order_id: str, event_id: str) -> dict[str, Any]:
    return {
        "orders": db.collection("orders").document(order_id).get(),
        "outbox": db.collection("outbox").document(event_id).get(),
    }


def test_demo_without_an_emulator_starts_and_stops_its_own() -> None:
    result = run_demo({"LOG_LEVEL": "WARNING"})
    assert result.returncode == 0, result.stderr
    first_line = result.stdout.splitlines()[0]
    assert first_line.startswith("Started a Firestore emulator at 127.0.0.1:")
    host, port = first_line.split(" at ")[1].split(" ")[0].split(":")
    with socket.socket() as sock:
        assert sock.connect_ex((host, int(port))) != 0, "the demo left its emulator running"


def test_bad_configuration_is_reported_without_a_traceback() -> None:
    result = run_demo({"FIRESTORE_EMULATOR_HOST": "not-a-host-port"})
    assert result.returncode == 2
    assert "error: FIRESTORE_EMULATOR_HOST must be host:port" in result.stderr
    assert "Traceback" not in result.stderr


def test_emulator_command_prints_its_host_and_stops_cleanly_on_ctrl_c() -> None:
    process = subprocess.Popen(
        [OUTBOX, "emulator"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        assert line.startswith("export FIRESTORE_EMULATOR_HOST=127.0.0.1:"), line or _why(process)
        host, port = line.split("=", 1)[1].split(":")
        assert requests.get(f"http://{host}:{port}/", timeout=5).ok
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
    with socket.socket() as sock:
        assert sock.connect_ex((host, int(port))) != 0, "the emulator outlived the command"


def _why(process: subprocess.Popen[str]) -> str:
    """What a command that printed nothing said on stderr (it failed once on 3.10 in CI with
    an empty line and nothing more to go on)."""
    process.kill()
    _, stderr = process.communicate(timeout=30)
    return f"no output; exit {process.returncode}; stderr: {stderr[-3000:]}"
