"""Every failure of every `outbox` command, through the real console script: one `error:`
line last on stderr, a non-zero exit status, no traceback (unless `--debug`).

Before, `outbox relay` stopped by an unreachable Firestore or a broken downstream exited
with only a JSON summary and a log line, and Ctrl-C printed a traceback."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from collections.abc import Iterator

import pytest
from google.cloud import firestore

from firestore_outbox.firestore.settings import Settings
from firestore_outbox.testing.emulator import free_port
from tests.e2e.cli.test_cli_arguments import OUTBOX
from tests.support.helpers import add_orders, relay_environment

ALL = (
    "status",
    "inspect",
    "requeue",
    "replay",
    "purge",
    "reconcile",
    "relay",
    "follow",
    "demo",
    "receiver",
)
# What each command needs to get as far as Firestore.
ARGS = {
    "inspect": ("inspect", "some-event"),
    "requeue": ("requeue", "--all", "--yes"),
    "replay": ("replay", "--dry-run"),
    "purge": ("purge", "--older-than", "1d"),
    "receiver": ("receiver", "--no-verify", "--port", "0"),
    "follow": ("relay", "--follow"),
}


def command(name: str) -> tuple[str, ...]:
    return ARGS.get(name, (name,))


def run(*args: str, **variables: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "FIRESTORE_PROJECT_ID": "outbox-test",
        "FIRESTORE_TIMEOUT_SECONDS": "2",
        "RELAY_FIRESTORE_TIMEOUT_SECONDS": "2",
        "DOWNSTREAM_SERVICE_URL": "http://127.0.0.1:9/events",
        **variables,
    }
    return subprocess.run([OUTBOX, *args], capture_output=True, text=True, env=env, timeout=60)


def assert_fails_in_one_line(done: subprocess.CompletedProcess[str], code: int) -> str:
    assert done.returncode == code, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert [line for line in lines if line.startswith("error:")] == lines[-1:], done.stderr
    return lines[-1]


@pytest.mark.parametrize("name", [*ALL, "emulator"])
def test_bad_configuration_is_one_line_naming_the_variable(name: str) -> None:
    done = run(*command(name), FIRESTORE_EMULATOR_HOST="127.0.0.1:9", LOG_LEVEL="LOUD")
    line = assert_fails_in_one_line(done, 2)
    assert line.startswith("error: LOG_LEVEL must be one of"), line


@pytest.mark.parametrize("name", [*ALL, "emulator"])
def test_bad_arguments_end_in_one_error_line(name: str) -> None:
    done = run(*command(name), "--no-such-option")
    line = assert_fails_in_one_line(done, 2)
    assert "unrecognized arguments: --no-such-option" in line


@pytest.mark.parametrize("name", ["relay", "demo"])
def test_an_unreachable_firestore_is_one_line(name: str) -> None:
    # The operations commands are covered in test_firestore_deadline.py.
    host = f"127.0.0.1:{free_port()}"
    done = run(*command(name), FIRESTORE_EMULATOR_HOST=host)
    line = assert_fails_in_one_line(done, 1 if name == "relay" else 2)
    assert host in line or "Firestore" in line, line


def test_an_unreachable_downstream_stops_the_relay_in_one_line(
    settings: Settings, db: firestore.Client
) -> None:
    add_orders(db, settings, 3)
    environment = relay_environment(
        settings, f"http://127.0.0.1:{free_port()}/events", RELAY_BREAKER_THRESHOLD="1"
    )
    done = run("relay", **environment)
    line = assert_fails_in_one_line(done, 1)
    assert line.startswith("error: the relay run stopped: the downstream channel is broken"), line
    assert '"stoppedBy": "channel"' in done.stdout  # the summary is still there for scripts


@pytest.fixture
def silent_firestore() -> Iterator[socket.socket]:
    """A listening socket that never answers: every call to it hangs."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(64)
        server.settimeout(60)
        yield server


@pytest.mark.parametrize(
    "name",
    ["status", "inspect", "requeue", "replay", "purge", "reconcile", "relay", "follow", "demo"],
)
def test_ctrl_c_is_one_line_and_exit_status_130(silent_firestore: socket.socket, name: str) -> None:
    # `follow` stops gracefully on Ctrl-C; its call to a silent Firestore is interrupted
    # after the grace (5 s), where it used to wait for the call's deadline (60 s here).
    host = f"127.0.0.1:{silent_firestore.getsockname()[1]}"
    env = {
        **os.environ,
        "FIRESTORE_PROJECT_ID": "outbox-test",
        "FIRESTORE_EMULATOR_HOST": host,
        "FIRESTORE_TIMEOUT_SECONDS": "60",
        "RELAY_FIRESTORE_TIMEOUT_SECONDS": "60",
        "DOWNSTREAM_SERVICE_URL": "http://127.0.0.1:9/events",
    }
    process = subprocess.Popen(
        [OUTBOX, *command(name)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    # Interrupted once it waits on Firestore (it has connected), not while it starts up.
    connection, _ = silent_firestore.accept()
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)
    connection.close()
    done = subprocess.CompletedProcess(process.args, process.returncode, out, err)
    assert assert_fails_in_one_line(done, 130) == "error: interrupted"


def test_debug_shows_the_traceback_then_the_line() -> None:
    host = f"127.0.0.1:{free_port()}"
    done = run("--debug", "inspect", "some-event", FIRESTORE_EMULATOR_HOST=host)
    assert done.returncode == 1
    assert "Traceback (most recent call last)" in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith(f"error: Firestore at {host}")
