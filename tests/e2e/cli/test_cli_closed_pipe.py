"""`outbox ... | head -1`: a reader that stops reading ends the command quietly, through real
pipes and the real console script. Before, `outbox status | head -1` ended with `error: Broken
pipe` and exit status 1, and `outbox --help | head -1` with a traceback."""

from __future__ import annotations

import os
import subprocess

import pytest

from firestore_outbox.firestore.settings import Settings
from tests.e2e.cli.test_cli_arguments import OUTBOX


def environment(settings: Settings) -> dict[str, str]:
    return {
        **os.environ,
        "FIRESTORE_EMULATOR_HOST": str(settings.emulator_host),
        "FIRESTORE_PROJECT_ID": str(settings.project_id),
        "DOWNSTREAM_SERVICE_URL": "http://127.0.0.1:9/events",  # replay's, never called
    }


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("status",), 0),
        (("status", "--json"), 0),
        (("reconcile",), 0),
        (("held",), 0),
        (("replay", "--list"), 0),
        (("--help",), 0),
        (("status", "--help"), 0),
        (("--version",), 0),
    ],
)
def test_a_pipe_closed_before_the_first_write_ends_the_command_quietly(
    settings: Settings, tmp_path: os.PathLike[str], args: tuple[str, ...], code: int
) -> None:
    # The reader is gone before the command writes anything: its first write (or the last
    # flush) meets EPIPE, every time (no race with a reader that might have read it all).
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [OUTBOX, *args],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            env=environment(settings),
            cwd=tmp_path,
            timeout=60,
        )
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (code, "")


def test_outbox_status_into_head_through_a_shell(
    settings: Settings, tmp_path: os.PathLike[str]
) -> None:
    done = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {OUTBOX} status | head -1"],
        capture_output=True,
        text=True,
        env=environment(settings),
        cwd=tmp_path,
        timeout=60,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("read project ") and done.stdout.count("\n") == 1
