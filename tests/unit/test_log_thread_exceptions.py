"""An uncaught exception in any thread (a client library's included) becomes one JSON line."""

from __future__ import annotations

import json
import logging
import threading

import pytest

from app.logs import configure_logging


def test_an_uncaught_thread_exception_is_one_json_line_with_its_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = logging.getLogger()
    handlers, hook = root.handlers[:], threading.excepthook
    root.handlers = []
    try:
        configure_logging(secrets=["s3cret-token"])

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
