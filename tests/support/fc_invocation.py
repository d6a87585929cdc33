"""Calling `function_compute.relay_handler.handler` as Function Compute calls it: a timer
event, a context, and a clean environment to configure the relay in.

    from tests.support.fc_invocation import clean_environment  # noqa: F401  (the `environment`
    fixture)
"""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.settings import Settings
from tests.support.helpers import relay_environment

TIMER_EVENT = (
    b'{"triggerTime": "2026-11-21T08:00:00Z", "triggerName": "relay-timer", "payload": ""}'
)


def fc_context(request_id: str = "req-1", timeout: int = 60) -> SimpleNamespace:
    """What Function Compute passes as `context`: the request id and the function's timeout."""
    return SimpleNamespace(request_id=request_id, function=SimpleNamespace(timeout=timeout))


@pytest.fixture(name="environment")
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, str]:
    """A clean environment and a working directory without a `.env` file."""
    for name in list(os.environ):
        if name.startswith(("FIRESTORE_", "RELAY_", "DOWNSTREAM_", "OUTBOX_", "ORDERS_")):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    return {}


def use(monkeypatch: pytest.MonkeyPatch, variables: dict[str, str]) -> None:
    """Set `variables` in the environment for this test."""
    for name, value in variables.items():
        monkeypatch.setenv(name, value)


@pytest.fixture(name="configured_relay")
def configured_relay(
    settings: Settings,
    receiver: Receiver,
    environment: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The clean environment with the relay configured for the test emulator and the
    `receiver` downstream (`relay_environment`)."""
    use(monkeypatch, relay_environment(settings, receiver.url))
