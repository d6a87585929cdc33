"""A client library's output in a CLI process is JSON lines too: an uncaught exception in
any thread, and the "google" loggers that google-api-core would detach from the root."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from firestore_outbox.observability.logs import configure_logging

ROOT = Path(__file__).resolve().parents[3]


def test_an_uncaught_thread_exception_is_one_json_line_with_its_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = logging.getLogger()
    handlers, hook = root.handlers[:], threading.excepthook
    root.handlers = []
    try:
        configure_logging(secrets=["s3cret-token"], thread_exceptions=True)

        def fail() -> None:
            raise RuntimeError("stream ended with s3cret-token")

        thread = threading.Thread(target=fail, name="Thread-OnRpcTerminated")
        thread.start()
        thread.join()
    finally:
        root.handlers, threading.excepthook = handlers, hook
    lines = capsys.readouterr().err.splitlines()
    [entry] = [json.loads(line) for line in lines]
    assert entry["event"] == "thread.exception"
    assert entry["thread"] == "Thread-OnRpcTerminated" and entry["errorClass"] == "RuntimeError"
    assert "Traceback" in entry["exception"] and "s3cret-token" not in json.dumps(entry)


def test_the_thread_hook_is_replaced_only_when_asked() -> None:
    root = logging.getLogger()
    handlers, level, hook = root.handlers[:], root.level, threading.excepthook
    root.handlers = []
    try:
        configure_logging(secrets=["s3cret-token"])
        assert threading.excepthook is hook
    finally:
        root.handlers, threading.excepthook = handlers, hook
        root.setLevel(level)


def test_a_client_library_warning_stays_a_json_line_after_a_firestore_client_is_made(
    tmp_path: Path,
) -> None:
    # A process of its own: google-api-core configures the "google" loggers once a process.
    script = (
        # An entry point's surface first, as in the handlers: its import silences
        # google-api-core's one-time Python 3.10 notice, which is not a log line.
        "import firestore_outbox.function_compute\n"
        "import logging\n"
        "from firestore_outbox.observability.logs import configure_logging\n"
        "from google.auth.credentials import AnonymousCredentials\n"
        "from google.cloud import firestore\n"
        "configure_logging(level='INFO')\n"
        "db = firestore.Client(project='outbox-test', credentials=AnonymousCredentials())\n"
        "db._firestore_api  # creating the API client initializes google-api-core logging\n"
        "logging.getLogger('google.api_core.bidi').warning('Background thread did not exit.')\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOOGLE_SDK_PYTHON")}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    lines = (done.stdout + done.stderr).splitlines()
    assert [json.loads(line)["message"] for line in lines] == ["Background thread did not exit."]
