"""`get_db_client` and the emulator manager, for real."""

from __future__ import annotations

import os
import socket

import pytest
import requests

from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.testing.emulator import FirestoreEmulator
from tests.conftest import PROJECT


def test_settings_alone_point_the_client_at_the_emulator(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, unique: str
) -> None:
    monkeypatch.delenv("FIRESTORE_EMULATOR_HOST", raising=False)
    get_db_client(settings).collection("probe").document(unique).set({"ok": True})
    # Read it back over the emulator's REST API: the write went to the emulator.
    url = (
        f"http://{settings.emulator_host}/v1/projects/{PROJECT}"
        f"/databases/(default)/documents/probe/{unique}"
    )
    response = requests.get(url, headers={"Authorization": "Bearer owner"}, timeout=10)
    assert response.status_code == 200
    assert response.json()["fields"] == {"ok": {"booleanValue": True}}


def test_stop_ends_the_whole_process_group_including_java(emulator_host: str) -> None:
    emulator = FirestoreEmulator()
    emulator.start()
    assert emulator._process is not None
    group = emulator._process.pid
    emulator.stop()
    with pytest.raises(ProcessLookupError):
        os.killpg(group, 0)
    with socket.socket() as sock:
        assert sock.connect_ex(("127.0.0.1", emulator.port)) != 0
