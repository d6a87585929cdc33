"""`outbox receiver` as a user runs it: refuses to start unverified, serves, stops on SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess

import requests

from firestore_outbox.firestore.settings import Settings
from firestore_outbox.testing.emulator import free_port
from tests.support.drill import OUTBOX


def environment(settings: Settings, **variables: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FIRESTORE_", "RECEIVER_"))}
    env.update(
        FIRESTORE_EMULATOR_HOST=str(settings.emulator_host),
        FIRESTORE_PROJECT_ID=str(settings.project_id),
        **variables,
    )
    return env


def test_without_a_secret_it_refuses_to_start(settings: Settings) -> None:
    result = subprocess.run(
        [OUTBOX, "receiver", "--port", "0"],
        env=environment(settings),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert "error: RECEIVER_SIGNING_SECRET is not set" in result.stderr
    assert "Traceback" not in result.stderr


def test_it_serves_until_sigterm(settings: Settings) -> None:
    port = free_port()
    process = subprocess.Popen(
        [OUTBOX, "receiver", "--port", str(port)],
        env=environment(settings, RECEIVER_SIGNING_SECRET="whsec-0123456789abcdef"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == f"listening on http://127.0.0.1:{port}/events"
        unsigned = {"ce-id": "e-1", "ce-source": "/shop", "content-type": "application/json"}
        url = f"http://127.0.0.1:{port}/events"
        response = requests.post(url, data=b"{}", headers=unsigned, timeout=10)
        assert response.status_code == 401
        assert response.json()["error"] == (
            "signature: missing webhook-id, webhook-timestamp, webhook-signature"
        )
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
    finally:
        process.kill()
        process.wait()
