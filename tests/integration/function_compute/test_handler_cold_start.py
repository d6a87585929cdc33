"""The relay handler's cold start: importing it needs no configuration and connects nowhere;
`initialize` warms the relay and never raises."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest

from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.function_compute import RelayFunction
from tests.support.fc_invocation import (
    TIMER_EVENT,
    clean_environment,  # noqa: F401  (the `environment` fixture)
    fc_context,
    use,
)
from tests.support.helpers import relay_environment


def test_importing_the_handler_needs_no_configuration_and_connects_nowhere(tmp_path: Path) -> None:
    # An unreachable emulator address: importing must not try it (nor fail on anything).
    env = {"PATH": "/usr/bin:/bin", "FIRESTORE_EMULATOR_HOST": "127.0.0.1:1"}
    code = (
        "import socket\n"
        "def refuse(*a, **k): raise AssertionError('network used at import')\n"
        "socket.socket.connect = refuse\n"
        "import function_compute.relay_handler as h\n"
        "print(callable(h.handler), callable(h.initialize))\n"
    )
    root = Path(__file__).resolve().parents[3]
    result = subprocess.run(
        [sys.executable, "-c", code],
        env={**env, "PYTHONPATH": str(root)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "True"]


def test_initialize_warms_the_relay_and_never_raises_on_bad_configuration(
    settings: Settings,
    receiver: Receiver,
    environment: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    function = RelayFunction()
    with caplog.at_level(logging.ERROR):
        function.initialize(fc_context())  # nothing configured yet
    assert "DOWNSTREAM_SERVICE_URL" in caplog.text

    use(monkeypatch, relay_environment(settings, receiver.url))
    function.initialize(fc_context())
    warmed = function.relay
    assert warmed is not None
    function.handler(TIMER_EVENT, fc_context())
    assert function.relay is warmed  # the same client and session are reused
