"""One Firestore deadline: an unreachable Firestore ends every operations command, and a
commit, within FIRESTORE_TIMEOUT_SECONDS, in one line that names the host and the deadline.

Before, each operations command hung about 5 minutes and printed a traceback, and a commit
against a dead host waited about 60 s."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from app.services import create_new_order
from app.uow import FirestoreUnitOfWork
from firestore_outbox.config.shortcuts import load_settings
from firestore_outbox.errors import CommitFailed, CommitOutcomeUnknown
from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.testing.emulator import free_port
from tests.e2e.cli.test_cli_arguments import OUTBOX
from tests.support.faults import stopped_emulator  # noqa: F401  (the `frozen_emulator` fixture)

DEADLINE = 2
BOUND = 20.0  # the deadline plus a generous margin for start-up and a loaded machine
COMMANDS = [
    ("status",),
    ("inspect", "some-event"),
    ("requeue", "--all", "--yes"),
    ("purge", "--older-than", "1d"),
    ("reconcile",),
]


def run_outbox(host: str, *args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    env = {
        **os.environ,
        "FIRESTORE_EMULATOR_HOST": host,
        "FIRESTORE_PROJECT_ID": "outbox-test",
        "FIRESTORE_TIMEOUT_SECONDS": str(DEADLINE),
    }
    started = time.monotonic()
    done = subprocess.run([OUTBOX, *args], capture_output=True, text=True, env=env, timeout=BOUND)
    return done, time.monotonic() - started


def assert_one_line(done: subprocess.CompletedProcess[str], host: str) -> None:
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"error: Firestore at {host} did not answer within {DEADLINE} s ("), line


@pytest.mark.parametrize("args", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_each_command_ends_within_the_deadline_when_nothing_listens(
    args: tuple[str, ...],
) -> None:
    host = f"127.0.0.1:{free_port()}"
    done, took = run_outbox(host, *args)
    assert_one_line(done, host)
    assert took < BOUND


@pytest.mark.parametrize("args", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_each_command_ends_within_the_deadline_against_a_frozen_emulator(
    frozen_emulator: str, args: tuple[str, ...]
) -> None:
    done, took = run_outbox(frozen_emulator, *args)
    assert_one_line(done, frozen_emulator)
    assert took < BOUND


def test_create_new_order_against_a_frozen_emulator_raises_within_the_deadline(
    frozen_emulator: str,
) -> None:
    settings = load_settings(
        {
            "FIRESTORE_EMULATOR_HOST": frozen_emulator,
            "FIRESTORE_PROJECT_ID": "outbox-test",
            "FIRESTORE_TIMEOUT_SECONDS": str(DEADLINE),
        }
    )
    started = time.monotonic()
    uow = FirestoreUnitOfWork(get_db_client(settings), settings)
    with pytest.raises((CommitOutcomeUnknown, CommitFailed)) as raised, uow:
        create_new_order("customer-1", [{"productId": "p-1", "quantity": 1}], uow)
    assert time.monotonic() - started < BOUND
    message = str(raised.value)
    assert frozen_emulator in message and f"{DEADLINE} s" in message, message
