"""The watchdog on the emulator, alerting to a local DingTalk robot that checks each message's
signature on its own: each stall (no heartbeat, an old backlog, FAILED growth, a stuck lease, a
broken channel) alerts once over two checks and recovers once over two more; a Firestore that
accepts connections and never answers is alerted on, and the check ends."""

from __future__ import annotations

import datetime as dt
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.cloud import firestore

from firestore_outbox.config.loader import Configuration
from firestore_outbox.config.wiring import make_watchdog
from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.health.watchdog import Watchdog
from firestore_outbox.ops import plan_requeue, requeue
from firestore_outbox.partitions import partition_of
from firestore_outbox.relay.heartbeat import Heartbeat
from firestore_outbox.testing.emulator import FirestoreEmulator
from tests.support.helpers import add_orders, add_own_event, make_relay, outbox, run_until, utcnow
from tests.support.robot_server import RobotServer

SECRET = "SECwatchdog-robot-signing-secret-42"


@pytest.fixture
def robot() -> Iterator[RobotServer]:
    with RobotServer(SECRET) as server:
        yield server


def watchdog_for(settings: Settings, robot: RobotServer, **variables: str) -> Watchdog:
    environ = {
        "FIRESTORE_EMULATOR_HOST": str(settings.emulator_host),
        "FIRESTORE_PROJECT_ID": str(settings.project_id),
        "WATCHDOG_WEBHOOK_URL": robot.url,
        "WATCHDOG_WEBHOOK_FORMAT": "dingtalk",
        "WATCHDOG_WEBHOOK_SECRET": SECRET,
        "RELAY_LOCK_TIMEOUT_SECONDS": "3",
        **variables,
    }
    return make_watchdog(Configuration.load(environ))


def fresh_heartbeat(db: firestore.Client) -> None:
    """A relay run that found nothing due, just now."""
    beat = Heartbeat(db, "outbox_health", every_seconds=0, timeout=5)
    assert beat.beat({"status": "ok", "stoppedBy": "drained", "instanceId": "test"})


def twice(watchdog: Watchdog) -> set[str]:
    first, second = watchdog.check(), watchdog.check()
    assert first.health.codes == second.health.codes
    return first.health.codes


def assert_once(robot: RobotServer, code: str, *, alerts: int, recoveries: int) -> None:
    assert robot.robot.refused == []  # every message was signed as DingTalk checks it
    got = (len(robot.robot.alerts(code)), len(robot.robot.recoveries(code)))
    assert got == (alerts, recoveries)


def alerted_once(watchdog: Watchdog, robot: RobotServer, code: str) -> str:
    """Two checks find `code` alone; the robot took one alert for it: its text."""
    assert twice(watchdog) == {code}
    assert_once(robot, code, alerts=1, recoveries=0)
    return robot.robot.alerts(code)[0]


def recovered_once(watchdog: Watchdog, robot: RobotServer, code: str) -> None:
    """Two checks find nothing; the robot took one recovery for `code` (and one alert)."""
    assert twice(watchdog) == set()
    assert_once(robot, code, alerts=1, recoveries=1)


def test_a_relay_that_never_ran_alerts_once_and_recovers_once_it_runs(
    db: firestore.Client, settings: Settings, robot: RobotServer, receiver: Receiver
) -> None:
    watchdog = watchdog_for(settings, robot)
    alerted_once(watchdog, robot, "relay_stopped")

    make_relay(db, settings, receiver.url).run()  # nothing due: its heartbeat all the same

    recovered_once(watchdog, robot, "relay_stopped")


def test_a_backlog_older_than_the_threshold_alerts_once_and_recovers_once_delivered(
    db: firestore.Client, settings: Settings, robot: RobotServer, receiver: Receiver
) -> None:
    fresh_heartbeat(db)
    add_own_event(db, settings, "late", nextAttemptAt=utcnow() - dt.timedelta(seconds=120))
    watchdog = watchdog_for(settings, robot, WATCHDOG_PENDING_AGE_SECONDS="60")
    assert "late" in alerted_once(watchdog, robot, "backlog_old")

    relay = make_relay(db, settings, receiver.url)
    run_until(relay, lambda: outbox(db, settings)["late"]["status"] == "PROCESSED")

    recovered_once(watchdog, robot, "backlog_old")


def test_failed_growth_alerts_once_and_recovers_once_requeued(
    db: firestore.Client, settings: Settings, robot: RobotServer
) -> None:
    fresh_heartbeat(db)
    add_own_event(db, settings, "rejected", status="FAILED", attempts=1, lastError="HTTP 422")
    watchdog = watchdog_for(settings, robot)
    alerted_once(watchdog, robot, "failed_growing")

    plan = plan_requeue(db, settings.outbox_collection, event_ids=["rejected"])
    assert requeue(db, settings.outbox_collection, plan, timeout=5)[0] == 1

    recovered_once(watchdog, robot, "failed_growing")


def test_a_lease_held_past_its_time_alerts_once_and_recovers_once_taken_back(
    db: firestore.Client, settings: Settings, robot: RobotServer, receiver: Receiver
) -> None:
    fresh_heartbeat(db)
    expired = utcnow() - dt.timedelta(seconds=600)
    lease = db.collection("outbox_partitions").document("3")
    lease.set({"holder": "relay-that-died", "expiresAt": expired, "updatedAt": expired})
    aggregate = next(a for a in (f"order-{n}" for n in range(1000)) if partition_of(a, 16) == 3)
    add_own_event(db, settings, "behind-the-lease", aggregateId=aggregate)
    watchdog = watchdog_for(settings, robot, WATCHDOG_STUCK_SECONDS="60")
    assert "relay-that-died" in alerted_once(watchdog, robot, "stuck_lease")

    # A relay takes the abandoned partition back, delivers its event and releases it.
    relay = make_relay(db, settings, receiver.url)
    run_until(relay, lambda: (lease.get().to_dict() or {}).get("expiresAt") is None)
    assert outbox(db, settings)["behind-the-lease"]["status"] == "PROCESSED"

    recovered_once(watchdog, robot, "stuck_lease")


def test_a_broken_channel_alerts_once_with_its_reason_and_recovers_once_delivering(
    db: firestore.Client, settings: Settings, robot: RobotServer, receiver: Receiver
) -> None:
    events = add_orders(db, settings, 4)
    with socket.socket() as closed:  # a port nothing listens on: every connect is refused
        closed.bind(("127.0.0.1", 0))
        refused = f"http://127.0.0.1:{closed.getsockname()[1]}/events"
    summary = make_relay(db, settings, refused, concurrency=1).run()
    assert summary["stoppedBy"] == "channel", summary
    watchdog = watchdog_for(settings, robot)
    assert summary["channel"] in alerted_once(watchdog, robot, "channel_broken")

    relay = make_relay(db, settings, receiver.url)  # the channel put right
    run_until(relay, lambda: {e["status"] for e in outbox(db, settings).values()} == {"PROCESSED"})
    assert sorted(outbox(db, settings)) == events

    recovered_once(watchdog, robot, "channel_broken")


def test_an_unanswering_firestore_is_alerted_on_and_the_check_ends(
    robot: RobotServer, tmp_path: Path
) -> None:
    with socket.socket() as silent:  # accepts connections (the kernel's backlog), never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        environ = {
            **{
                k: v for k, v in os.environ.items() if not k.startswith(("FIRESTORE_", "WATCHDOG_"))
            },
            "FIRESTORE_EMULATOR_HOST": f"127.0.0.1:{silent.getsockname()[1]}",
            "FIRESTORE_PROJECT_ID": "outbox-test",
            "WATCHDOG_TIMEOUT_SECONDS": "1",
            "WATCHDOG_WEBHOOK_URL": robot.url,
            "WATCHDOG_WEBHOOK_FORMAT": "dingtalk",
            "WATCHDOG_WEBHOOK_SECRET": SECRET,
        }
        command = [str(Path(sys.executable).with_name("outbox")), "watchdog", "--json"]
        # The timeout is a hang guard, not a speed target.
        options = {"env": environ, "cwd": tmp_path, "timeout": 120}
        done = subprocess.run(command, capture_output=True, text=True, check=False, **options)
    assert done.returncode == 3, done.stderr
    report = json.loads(done.stdout)
    assert [p["code"] for p in report["problems"]] == ["firestore_unreachable"]
    assert_once(robot, "firestore_unreachable", alerts=1, recoveries=0)
    assert SECRET not in done.stdout + done.stderr
    assert "robot-access-token" not in done.stderr


def test_a_frozen_firestore_alerts_once_and_recovers_once_it_answers(
    robot: RobotServer, pausable_emulator: FirestoreEmulator
) -> None:
    emulator = pausable_emulator
    settings = Settings(project_id="watchdog-frozen", emulator_host=emulator.host_port)
    watchdog = watchdog_for(settings, robot, WATCHDOG_TIMEOUT_SECONDS="1")
    make_relay(get_db_client(settings), settings, "http://127.0.0.1:9/unused").run()
    assert watchdog.check().health.ok
    emulator.pause()  # SIGSTOP to its group: every call hangs
    try:
        assert twice(watchdog) == {"firestore_unreachable"}
    finally:
        emulator.resume()
    assert_once(robot, "firestore_unreachable", alerts=1, recoveries=0)
    recovered_once(watchdog, robot, "firestore_unreachable")
