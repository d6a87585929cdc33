"""What the relay logs, where an operator reads it: one JSON object per line, one summary per
invocation, one line per failed delivery, and never a configured secret."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from google.cloud import firestore

from firestore_outbox.consumer.receiver import Received, Receiver, ReceiverAnswer
from firestore_outbox.firestore.settings import Settings
from function_compute.relay_handler import handler
from tests.support.helpers import add_orders, outbox, relay_environment

OUTBOX = shutil.which("outbox") or os.path.join(os.path.dirname(sys.executable), "outbox")
AK_SECRET = "ak-s3cr3t-Value-0001"
STS_TOKEN = "sts-t0ken-Value-0002"
URL_TOKEN = "url-t0ken-Value-0003"


def secret_environment(
    settings: Settings, receiver: Receiver, key_info: dict[str, Any]
) -> dict[str, str]:
    return relay_environment(
        settings,
        f"{receiver.url}?token={URL_TOKEN}",
        ALIBABA_CLOUD_ACCESS_KEY_SECRET=AK_SECRET,
        ALIBABA_CLOUD_SECURITY_TOKEN=STS_TOKEN,
        FIRESTORE_CREDENTIALS_JSON=json.dumps(key_info),
    )


def leaky(key_info: dict[str, Any]) -> Any:
    """A downstream that fails and echoes every secret it can think of in its error body."""
    pem_line = key_info["private_key"].splitlines()[1]

    def respond(request: Received) -> ReceiverAnswer:
        body = f"503 for {request.path}: {AK_SECRET} {STS_TOKEN} {pem_line}"
        return ReceiverAnswer(503, body=body.encode())

    return respond


def secrets_of(key_info: dict[str, Any]) -> list[str]:
    return [AK_SECRET, STS_TOKEN, URL_TOKEN, *key_info["private_key"].splitlines()[1:-1]]


def test_the_handler_logs_json_lines_without_secrets(
    db: firestore.Client,
    settings: Settings,
    receiver: Receiver,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    key_info: dict[str, Any],
) -> None:
    monkeypatch.chdir(tmp_path)
    for name, value in secret_environment(settings, receiver, key_info).items():
        monkeypatch.setenv(name, value)
    receiver.respond = leaky(key_info)
    event_ids = add_orders(db, settings, 3)
    context = SimpleNamespace(request_id="req-7", function=SimpleNamespace(timeout=60))

    with caplog.at_level(logging.INFO):
        summary = handler(b"{}", context)

    assert summary["retried"] == 3
    lines = [json.loads(line) for line in caplog.text.splitlines()]  # each line is JSON
    [logged] = [line for line in lines if line.get("event") == "relay.summary"]
    assert {k: logged[k] for k in summary} == summary  # counts, durationMs, lagMs, ...
    assert logged["lagMs"] >= 0 and logged["requestId"] == "req-7"
    failed = [line for line in lines if line.get("event") == "relay.delivery_failed"]
    assert sorted(line["eventId"] for line in failed) == event_ids
    for line in failed:
        assert (line["attempt"], line["errorClass"], line["outcome"]) == (1, "HTTP 503", "retried")
        assert line["level"] == "WARNING" and line["error"].startswith("HTTP 503: 503 for ***")
    for secret in secrets_of(key_info):
        assert secret not in caplog.text
    stored = [event["lastError"] for event in outbox(db, settings).values()]
    assert len(stored) == 3 and all("HTTP 503: 503 for ***" in error for error in stored)
    for secret in secrets_of(key_info):  # nor in Firestore, where operators read lastError
        assert not any(secret in error for error in stored)


def test_the_cli_writes_json_log_lines_to_stderr(
    db: firestore.Client, settings: Settings, receiver: Receiver, key_info: dict[str, Any]
) -> None:
    receiver.respond = leaky(key_info)
    event_ids = add_orders(db, settings, 2)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("FIRESTORE_", "RELAY_", "DOWNSTREAM_", "ALIBABA_"))
    }
    env.update(secret_environment(settings, receiver, key_info), LOG_LEVEL="INFO")

    result = subprocess.run(
        [OUTBOX, "relay"], env=env, capture_output=True, text=True, timeout=120, check=False
    )

    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["retried"] == 2
    lines = [json.loads(line) for line in result.stderr.splitlines()]
    failed = [line for line in lines if line.get("event") == "relay.delivery_failed"]
    assert sorted(line["eventId"] for line in failed) == event_ids
    for secret in secrets_of(key_info):
        assert secret not in result.stderr + result.stdout
