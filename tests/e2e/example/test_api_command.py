"""`outbox api` refuses what it cannot serve in one line, before it listens."""

from __future__ import annotations

import os
import resource
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


def outbox_api(
    *args: str, open_files: tuple[int, int] | None = None, **variables: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [OUTBOX, "api", *args],
        env={**ENV, **variables},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        preexec_fn=None if open_files is None else lambda: limit_open_files(*open_files),
    )


def limit_open_files(soft: int, hard: int) -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


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
        (("--read-timeout", "0"), "argument --read-timeout: must be a number of seconds more"),
        (("--read-timeout", "nan"), "argument --read-timeout: must be a number of seconds more"),
        (("--connection-limit", "0"), "argument --connection-limit: must be a whole number"),
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


def test_a_connection_limit_the_open_files_limit_cannot_hold_is_refused() -> None:
    result = outbox_api("--connection-limit", "500", open_files=(200, 200))
    assert result.returncode == 2
    assert result.stderr == (
        "error: --connection-limit 500 needs 564 open files; the hard limit (ulimit -Hn) is 200\n"
    )


def serving_limits(soft: int, hard: int, *args: str) -> tuple[tuple[int, int], str]:
    """The open-files limits of `outbox api` started under (soft, hard), once it listens,
    and what it wrote to stderr."""
    process = subprocess.Popen(
        [OUTBOX, "api", "--port", "0", *args],
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: limit_open_files(soft, hard),
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        listening = line.startswith("listening on ")
        limits = resource.prlimit(process.pid, resource.RLIMIT_NOFILE) if listening else (0, 0)
    finally:
        process.kill()
        _, stderr = process.communicate(timeout=10)
    # What it said, when it did not listen: the reason is on its stderr.
    assert line.startswith("listening on "), (line, process.returncode, stderr[-3000:])
    return limits, stderr


def test_a_low_soft_open_files_limit_is_raised_to_the_connection_limit() -> None:
    limits, _ = serving_limits(200, 4096, "--connection-limit", "500")
    assert limits == (564, 4096)


def test_the_default_connection_limit_shrinks_to_a_low_hard_limit_and_says_so() -> None:
    # Not asked for: served with what fits (200 files less 64 spare) rather than refused.
    limits, stderr = serving_limits(100, 200)
    assert limits == (200, 200)
    assert "serving at most 136 connections at once, not 500" in stderr
