"""A test run or `outbox emulator` killed outright (SIGKILL, CI's timeout) takes the servers it
started with it: the Firestore emulator's Java process, the RabbitMQ node and the order API's
server process are ended by their watchdogs (firestore_outbox/testing/watchdog.py), their ports
freed.

Each test starts a real pytest (or `outbox emulator`) in a subprocess, finds the server it
started by the port it reports, SIGKILLs the subprocess and waits, within a bound, for that
server's whole process group and its port to be gone. Only processes found that way, started
by the test's own subprocess, are ever signalled (and only to clean up after a failure).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.drill import OUTBOX
from tests.support.processes import kill_group, listeners, wait_until_gone
from tests.support.rabbitmq import server_command

ROOT = Path(__file__).resolve().parents[3]
START_BOUND = 120.0  # Java or Erlang starting on a busy two-CPU machine
GONE_BOUND = 30.0

HOLD_EMULATOR = """
import os, time
from pathlib import Path

def test_hold(emulator_host):
    Path(os.environ["HOLD_FILE"]).write_text(emulator_host.rsplit(":", 1)[1])
    time.sleep(600)
"""

HOLD_API = """
import os, time
from pathlib import Path
from tests.support.api_servers import api_server

def test_hold(settings):
    with api_server(settings) as server:
        Path(os.environ["HOLD_FILE"]).write_text(server.url.rsplit(":", 1)[1].split("/")[0])
        time.sleep(600)
"""

HOLD_RABBITMQ = """
import os, time
from pathlib import Path

def test_hold(rabbitmq):
    Path(os.environ["HOLD_FILE"]).write_text(str(rabbitmq.port))
    time.sleep(600)
"""


def environment() -> dict[str, str]:
    # Without FIRESTORE_EMULATOR_HOST the fixture starts an emulator of its own.
    return {k: v for k, v in os.environ.items() if k != "FIRESTORE_EMULATOR_HOST"}


def assert_server_dies_with(process: subprocess.Popen[bytes], port_of: Path | None) -> None:
    """Wait for the server's port (read from `port_of`, or from `process`'s first line),
    SIGKILL `process`, and assert the server's process group and port are gone."""
    deadline = time.monotonic() + START_BOUND
    if port_of is None:
        assert process.stdout is not None
        port = int(process.stdout.readline().decode().rsplit(":", 1)[1])
    else:
        while not port_of.exists():
            assert process.poll() is None, "pytest ended before its fixture started the server"
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.5)
        port = int(port_of.read_text())
    holders = listeners(port)
    assert holders, f"nothing listens on port {port}"
    pgid = os.getpgid(holders.pop())
    # A group of its own, so that the clean-up below can never signal this test's group.
    assert pgid not in (process.pid, os.getpgrp()), "the server runs in a process group of its own"
    try:
        process.send_signal(signal.SIGKILL)
        process.wait(30)
        left, sockets = wait_until_gone(pgid, port, GONE_BOUND)
        assert not left, f"still running {GONE_BOUND:g} s after the kill: {sorted(left)}"
        assert not sockets, f"port {port} still listened on"
    finally:
        process.kill()
        kill_group(pgid)


def held_by_pytest(tmp_path: Path, plugin: str, test: str) -> tuple[subprocess.Popen[bytes], Path]:
    """pytest, started on one test that reports its server's port and then sleeps."""
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_hold.py").write_text(test)
    port_of = tmp_path / "port"
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "pytest", "-p", plugin, "-p", "no:cacheprovider", "-q"),
            *("--rootdir", str(tmp_path), "-c", str(tmp_path / "pytest.ini")),
            str(tmp_path / "test_hold.py"),
        ],
        cwd=ROOT,  # so that `tests.conftest` imports
        env={**environment(), "HOLD_FILE": str(port_of)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return process, port_of


def test_killed_pytest_takes_its_firestore_emulator_with_it(tmp_path: Path) -> None:
    process, port_of = held_by_pytest(tmp_path, "tests.conftest", HOLD_EMULATOR)
    assert_server_dies_with(process, port_of)


def test_killed_outbox_emulator_takes_its_java_with_it() -> None:
    process = subprocess.Popen(
        [OUTBOX, "emulator"], env=environment(), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert_server_dies_with(process, None)


def test_killed_pytest_takes_its_order_api_server_with_it(tmp_path: Path) -> None:
    process, port_of = held_by_pytest(tmp_path, "tests.conftest", HOLD_API)
    assert_server_dies_with(process, port_of)


@pytest.mark.skipif(server_command() is None, reason="rabbitmq-server is not installed")
def test_killed_pytest_takes_its_rabbitmq_node_with_it(tmp_path: Path) -> None:
    process, port_of = held_by_pytest(tmp_path, "tests.support.rabbitmq", HOLD_RABBITMQ)
    assert_server_dies_with(process, port_of)
