"""One configuration loader: `.env` is read once per invocation, from the working directory
only (never a parent's), by the `outbox` command and by the Function Compute handler.

Before, one `outbox relay` opened `.env` five times (settings, log masking, relay config, the
publisher's and the attempts' secrets), and `.env` was looked for in every parent directory
while the README said the working directory."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from google.cloud import firestore

from firestore_outbox.cli import main
from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.settings import Settings
from function_compute.relay_handler import handler
from tests.e2e.cli.test_cli_arguments import OUTBOX
from tests.support.helpers import add_orders, outbox, relay_environment

_opened: list[str] = []
_watching: list[str] = []


def _audit(event: str, args: tuple[Any, ...]) -> None:
    # Audit hooks cannot be removed: this one only counts while a test watches a path.
    if event != "open" or not _watching or not args:
        return
    if isinstance(args[0], (str, bytes, os.PathLike)) and os.fsdecode(args[0]) == _watching[-1]:
        _opened.append(_watching[-1])


sys.addaudithook(_audit)


@pytest.fixture
def dotenv_opens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Runs the test in `tmp_path` with an empty process environment for our variables, and
    yields the list of times `tmp_path/.env` was opened."""
    monkeypatch.chdir(tmp_path)
    for name in list(os.environ):
        if name.startswith(("FIRESTORE_", "RELAY_", "DOWNSTREAM_", "OUTBOX_", "LOG_LEVEL")):
            monkeypatch.delenv(name)
    _opened.clear()
    _watching.append(str(tmp_path / ".env"))
    try:
        yield _opened
    finally:
        _watching.pop()


def write_dotenv(variables: dict[str, str]) -> None:
    Path(".env").write_text("".join(f"{name}={value}\n" for name, value in variables.items()))


def test_outbox_relay_reads_dotenv_once_and_delivers_with_it(
    settings: Settings, db: firestore.Client, dotenv_opens: list[str], receiver: Receiver
) -> None:
    event_ids = add_orders(db, settings, 2)
    write_dotenv(relay_environment(settings, receiver.url))
    assert main(["relay", "--time-budget", "5"]) == 0
    assert dotenv_opens == [str(Path.cwd() / ".env")]
    assert {e["status"] for e in outbox(db, settings).values()} == {"PROCESSED"}
    assert sorted(r.headers["ce-id"] for r in receiver.received) == event_ids


def test_outbox_status_reads_dotenv_once(settings: Settings, dotenv_opens: list[str]) -> None:
    write_dotenv(
        {
            "FIRESTORE_EMULATOR_HOST": str(settings.emulator_host),
            "FIRESTORE_PROJECT_ID": str(settings.project_id),
            "RELAY_LOCK_TIMEOUT_SECONDS": "60",
        }
    )
    assert main(["status"]) == 0
    assert len(dotenv_opens) == 1


def test_the_handler_reads_dotenv_once_per_invocation(
    settings: Settings, db: firestore.Client, dotenv_opens: list[str], receiver: Receiver
) -> None:
    add_orders(db, settings, 1)
    write_dotenv(relay_environment(settings, receiver.url))
    context = SimpleNamespace(request_id="req-1", function=SimpleNamespace(timeout=30))
    assert handler(b"", context)["processed"] == 1
    assert handler(b"", context)["processed"] == 0
    assert len(dotenv_opens) == 2  # two invocations


def test_dotenv_is_read_from_the_working_directory_only(tmp_path: Path) -> None:
    child = tmp_path / "child"
    child.mkdir()
    (tmp_path / ".env").write_text("LOG_LEVEL=LOUD\n")  # a parent's: must not count
    env = {k: v for k, v in os.environ.items() if k != "LOG_LEVEL"}
    env.update(FIRESTORE_EMULATOR_HOST="127.0.0.1:9", FIRESTORE_PROJECT_ID="outbox-test")
    # A command that loads the configuration: the parent's LOG_LEVEL=LOUD is not read...
    done = subprocess.run(
        [OUTBOX, "purge", "--batch-size", "0"], capture_output=True, text=True, env=env, cwd=child
    )
    assert done.stderr.strip() == "error: --batch-size must be between 1 and 500", done.stderr
    # ...while the working directory's is.
    (child / ".env").write_text("LOG_LEVEL=LOUD\n")
    done = subprocess.run(
        [OUTBOX, "purge", "--batch-size", "0"], capture_output=True, text=True, env=env, cwd=child
    )
    assert done.returncode == 2
    assert done.stderr.strip().startswith("error: LOG_LEVEL must be one of"), done.stderr
