"""The real `outbox` console script: its version, and arguments refused before any work."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

OUTBOX = os.path.join(os.path.dirname(sys.executable), "outbox")
OUTBOX = OUTBOX if os.path.exists(OUTBOX) else shutil.which("outbox") or OUTBOX
ROOT = Path(__file__).resolve().parents[3]


def outbox(*args: str) -> subprocess.CompletedProcess[str]:
    # No Firestore anywhere: a refused argument must never get as far as connecting.
    env = {
        **os.environ,
        "FIRESTORE_EMULATOR_HOST": "127.0.0.1:9",
        "FIRESTORE_PROJECT_ID": "outbox-test",
    }
    return subprocess.run([OUTBOX, *args], capture_output=True, text=True, env=env, timeout=60)


def test_version_is_the_installed_packages() -> None:
    written = (ROOT / "firestore_outbox" / "_version.py").read_text()  # pyproject reads it
    match = re.search(r'^VERSION = "([^"]+)"$', written, re.MULTILINE)
    assert match is not None
    expected = match.group(1)
    done = outbox("--version")
    assert (done.returncode, done.stdout.strip()) == (0, f"outbox {expected}")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("relay", "--time-budget", "-5"), "must be a number of seconds more than 0"),
        (("relay", "--time-budget", "0"), "must be a number of seconds more than 0"),
        (("relay", "--time-budget", "soon"), "is not a number of seconds"),
        (("purge", "--older-than", "0s"), "a duration must be more than 0"),
        (("status", "--lock-timeout", "0"), "a duration must be more than 0"),
        # Finite, but a date that far away overflows: once a crash reported as a bug, exit 1.
        (("purge", "--older-than", "99999999d"), "a duration must be at most 100 years"),
        (("reconcile", "--since", "9999999d"), "a duration must be at most 100 years"),
        (("status", "--lock-timeout", "99999999d"), "a duration must be at most 100 years"),
        (("relay", "--time-budget", "1e300"), "at most 100 years"),
        # A negative limit sliced ids off the end of the list instead of listing none.
        (("reconcile", "--limit", "-1"), "--limit must be at least 0"),
    ],
)
def test_nonsense_arguments_are_refused_in_one_line_naming_the_argument(
    args: tuple[str, ...], message: str
) -> None:
    done = outbox(*args)
    assert done.returncode == 2
    assert message in done.stderr and args[1] in done.stderr
    assert "Traceback" not in done.stderr


def test_the_emulator_command_refuses_a_port_already_taken() -> None:
    # Before, the readiness check was answered by whatever held the port and it said ready.
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = outbox("emulator", "--port", str(port))
    assert done.returncode == 2, done.stdout
    assert done.stderr.strip().splitlines() == [
        f"error: cannot start the emulator on 127.0.0.1:{port}: Address already in use"
    ]
    assert "FIRESTORE_EMULATOR_HOST" not in done.stdout


def test_the_receiver_command_refuses_a_port_already_taken() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = outbox("receiver", "--no-verify", "--port", str(port))
    assert done.returncode == 2, done.stdout
    assert done.stderr.strip().splitlines() == [
        f"error: cannot listen on 127.0.0.1:{port}: Address already in use"
    ]
