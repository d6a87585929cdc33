"""The relay handler's answer to a configuration problem: an error summary naming the
variable, never a secret."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.settings import Settings
from function_compute.relay_handler import handler
from tests.support.fc_invocation import (
    TIMER_EVENT,
    clean_environment,  # noqa: F401  (the `environment` fixture)
    fc_context,
    use,
)
from tests.support.helpers import relay_environment


@pytest.mark.parametrize(
    ("missing", "named"),
    [
        ("DOWNSTREAM_SERVICE_URL", "DOWNSTREAM_SERVICE_URL"),
        ("FIRESTORE_EMULATOR_HOST", "FIRESTORE_CREDENTIALS_PATH"),
        ("RELAY_MAX_ATTEMPTS", "RELAY_MAX_ATTEMPTS"),
    ],
)
def test_a_configuration_problem_returns_an_error_naming_the_variable(
    settings: Settings,
    receiver: Receiver,
    environment: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    missing: str,
    named: str,
) -> None:
    variables = relay_environment(settings, receiver.url)
    if missing == "RELAY_MAX_ATTEMPTS":
        variables[missing] = "five"  # malformed rather than missing
    else:
        del variables[missing]
    use(monkeypatch, variables)

    with caplog.at_level(logging.ERROR):
        summary = handler(TIMER_EVENT, fc_context())

    assert summary["status"] == "error" and named in summary["error"]
    assert (summary["processed"], summary["failed"]) == (0, 0)
    assert named in caplog.text


def test_a_service_account_key_without_a_project_needs_firestore_project_id(
    environment: dict[str, str], monkeypatch: pytest.MonkeyPatch, key_info: dict[str, Any]
) -> None:
    key = {k: v for k, v in key_info.items() if k != "project_id"}
    use(
        monkeypatch,
        {
            "DOWNSTREAM_SERVICE_URL": "https://example.com/hook",
            "FIRESTORE_CREDENTIALS_JSON": json.dumps(key),
        },
    )
    summary = handler(TIMER_EVENT, fc_context())
    assert summary["status"] == "error" and "FIRESTORE_PROJECT_ID" in summary["error"]
    assert key_info["private_key"][40:80] not in json.dumps(summary)


@pytest.mark.parametrize(
    "url", ["http://[::1/t0ps3cret", "http://127.0.0.1:99999/t0ps3cret", "gopher://h/t0ps3cret"]
)
def test_a_malformed_url_is_an_error_summary_naming_the_variable(
    settings: Settings, environment: dict[str, str], monkeypatch: pytest.MonkeyPatch, url: str
) -> None:
    use(monkeypatch, relay_environment(settings, url))
    summary = handler(TIMER_EVENT, fc_context())
    assert summary["status"] == "error" and summary["processed"] == 0
    assert summary["error"].startswith("DOWNSTREAM_SERVICE_URL must be")
    assert "t0ps3cret" not in json.dumps(summary)
