"""A Firestore outage is one alert and one recovery across the watchdog handler's warm
invocations (each builds a new `Watchdog`), on a real emulator frozen with SIGSTOP, alerting
to a local DingTalk robot that counts messages; a second instance (a cold start) during the
outage alerts once more and sends no second recovery."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from firestore_outbox.config.loader import Configuration
from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.firestore.deadline import with_deadline
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.function_compute import watchdog_handler
from firestore_outbox.health.outage import OutageMemory
from firestore_outbox.health.watchdog import Watchdog
from firestore_outbox.testing.emulator import FirestoreEmulator
from tests.support.helpers import make_relay
from tests.support.robot_server import RobotServer

SECRET = "SECwatchdog-robot-signing-secret-42"
CODE = "firestore_unreachable"


@pytest.fixture
def emulator(pausable_emulator: FirestoreEmulator) -> FirestoreEmulator:
    """The session's emulator that tests may freeze (each test here has its own project)."""
    return pausable_emulator


@pytest.fixture
def robot() -> Iterator[RobotServer]:
    with RobotServer(SECRET) as server:
        yield server


def environment(emulator: FirestoreEmulator, robot: RobotServer, project: str) -> dict[str, str]:
    return {
        "FIRESTORE_EMULATOR_HOST": emulator.host_port,
        "FIRESTORE_PROJECT_ID": project,
        "WATCHDOG_TIMEOUT_SECONDS": "1",
        "WATCHDOG_WEBHOOK_URL": robot.url,
        "WATCHDOG_WEBHOOK_FORMAT": "dingtalk",
        "WATCHDOG_WEBHOOK_SECRET": SECRET,
    }


def healthy(emulator: FirestoreEmulator, project: str) -> None:
    """A relay run just now: the watchdog's next check finds nothing wrong."""
    settings = Settings(project_id=project, emulator_host=emulator.host_port)
    make_relay(get_db_client(settings), settings, "http://127.0.0.1:9/unused").run()


def counted(robot: RobotServer) -> tuple[int, int]:
    assert robot.robot.refused == []
    return len(robot.robot.alerts(CODE)), len(robot.robot.recoveries(CODE))


def test_warm_handler_invocations_alert_once_and_recover_once(
    emulator: FirestoreEmulator, robot: RobotServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in environment(emulator, robot, "watchdog-warm").items():
        monkeypatch.setenv(name, value)
    healthy(emulator, "watchdog-warm")
    assert watchdog_handler(None, None)["status"] == "ok"
    emulator.pause()  # SIGSTOP to its group: every read hangs past the 1 s timeout
    try:
        frozen = [watchdog_handler(None, None) for _ in range(3)]
    finally:
        emulator.resume()
    assert [[p["code"] for p in r["problems"]] for r in frozen] == [[CODE]] * 3
    assert [r["alerted"] for r in frozen] == [[CODE], [], []]
    assert counted(robot) == (1, 0)
    back = [watchdog_handler(None, None) for _ in range(2)]
    assert [r["status"] for r in back] == ["ok", "ok"]
    assert [r["toldRecovered"] for r in back] == [[CODE], []]
    assert counted(robot) == (1, 1)


def instance(emulator: FirestoreEmulator, robot: RobotServer) -> Watchdog:
    """A watchdog as a new Function Compute instance has it: a memory of its own."""
    configuration = Configuration.load(environment(emulator, robot, "watchdog-cold"))
    watchdog = configuration.watchdog()
    settings = configuration.settings
    client = with_deadline(get_db_client(settings), watchdog.timeout_seconds)
    return Watchdog(
        client,
        settings,
        watchdog,
        partitions=16,
        lock_timeout_seconds=300,
        memory=OutageMemory(),
    )


def test_a_cold_start_during_an_outage_alerts_again_and_sends_no_second_recovery(
    emulator: FirestoreEmulator, robot: RobotServer
) -> None:
    healthy(emulator, "watchdog-cold")
    warm, cold = instance(emulator, robot), instance(emulator, robot)
    emulator.pause()
    try:
        warm.check()
        warm.check()
        cold.check()  # a new instance: it cannot read what was sent
    finally:
        emulator.resume()
    assert counted(robot) == (2, 0)
    assert cold.check().notices.told_recovered == [CODE]  # the first to read Firestore again
    assert warm.check().notices.told_recovered == []  # it finds the recovery recorded
    assert warm.check().health.ok and cold.check().health.ok
    assert counted(robot) == (2, 1)
