"""`outbox api` refuses what it cannot serve in one line, before it listens."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

OUTBOX = str(Path(sys.executable).with_name("outbox"))
ENV = {
    "PATH": os.environ["PATH"],
    "FIRESTORE_EMULATOR_HOST": "127.0.0.1:9",  # never reached: each case ends before
    "FIRESTORE_PROJECT_ID": "demo-api",
}


def outbox_api(*args: str, **variables: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [OUTBOX, "api", *args],
        env={**ENV, **variables},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_port_already_taken_is_one_error_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = outbox_api("--port", str(port))
    assert result.returncode == 2
    assert result.stderr == f"error: cannot listen on 127.0.0.1:{port}: Address already in use\n"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--port", "70000"), "argument --port: must be a whole number from 0 to 65535"),
        (("--threads", "0"), "argument --threads: must be a whole number from 1 to 1000"),
    ],
)
def test_bad_arguments_are_refused_by_argparse(args: tuple[str, ...], says: str) -> None:
    result = outbox_api(*args)
    assert result.returncode == 2 and says in result.stderr


def test_a_bad_front_door_variable_is_named() -> None:
    key = "k1:" + "A" * 43 + "="  # a valid key (32 bytes in base64), listed twice
    result = outbox_api(IDEMPOTENCY_ENCRYPTION_KEYS=f"{key},{key}")
    assert result.returncode == 2
    assert result.stderr == "error: IDEMPOTENCY_ENCRYPTION_KEYS names key k1 twice\n"
    assert "A" * 43 not in result.stderr
