"""JSON log lines: fields at the top level, secrets masked however they are escaped."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from firestore_outbox.config.secrets import configured_secrets
from firestore_outbox.observability.logs import JsonFormatter, log_event
from firestore_outbox.publishers import Outcome, PublishResult
from firestore_outbox.publishers.base import error_class

KEY = '{"type": "service_account", "private_key": "-----BEGIN KEY-----\\nMIIsecret\\n"}'


def test_a_structured_record_is_one_json_line_with_its_fields(
    caplog: pytest.LogCaptureFixture,
) -> None:
    logger = logging.getLogger("test.logs")
    with caplog.at_level(logging.INFO):
        log_event(logger, logging.INFO, "relay.summary", "relay summary", processed=3, lagMs=12)
    line = JsonFormatter().format(caplog.records[-1])

    assert "\n" not in line
    entry = json.loads(line)
    assert entry["event"] == "relay.summary" and entry["message"] == "relay summary"
    assert (entry["processed"], entry["lagMs"], entry["level"]) == (3, 12, "INFO")
    assert entry["logger"] == "test.logs" and entry["time"].endswith("Z")


def test_a_plain_record_and_its_traceback_stay_one_json_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    logger = logging.getLogger("test.logs")
    try:
        raise RuntimeError("line one\nline two")
    except RuntimeError:
        logger.exception("it failed with %s", "style")
    entry = json.loads(JsonFormatter().format(caplog.records[-1]))

    assert entry["message"] == "it failed with style"
    assert "RuntimeError: line one\nline two" in entry["exception"]


def test_secrets_are_masked_even_when_json_escapes_them(
    caplog: pytest.LogCaptureFixture,
) -> None:
    secrets = configured_secrets(
        {
            "FIRESTORE_CREDENTIALS_JSON": KEY,
            "ALIBABA_CLOUD_ACCESS_KEY_SECRET": "ak-secret-123",
            "DOWNSTREAM_SERVICE_URL": "https://user:pw@downstream.test/hook?token=t0k3n",
        }
    )
    logger = logging.getLogger("test.logs")
    private_key = json.loads(KEY)["private_key"]
    log_event(
        logger,
        logging.WARNING,
        "relay.delivery_failed",
        f"got ak-secret-123 and {private_key!r}",
        error='echo "ak-secret-123" from /hook?token=t0k3n',
        key=private_key,
    )
    line = JsonFormatter(secrets).format(caplog.records[-1])

    entry = json.loads(line)
    for secret in ("ak-secret-123", "MIIsecret", "t0k3n", "user:pw"):
        assert secret not in line
    assert entry["key"] == "***" and entry["error"] == 'echo "***" from ***'


def test_configured_secrets_reads_the_key_file(tmp_path: Path) -> None:
    path = tmp_path / "key.json"
    path.write_text(KEY)
    secrets = configured_secrets({"FIRESTORE_CREDENTIALS_PATH": str(path)})
    assert json.loads(KEY)["private_key"] in secrets
    assert configured_secrets({}) == []


@pytest.mark.parametrize(
    ("result", "name"),
    [
        (PublishResult(Outcome.RETRY, "HTTP 503: busy"), "HTTP 503"),
        (PublishResult(Outcome.REJECTED, "HTTP 422"), "HTTP 422"),
        (PublishResult(Outcome.RETRY, "timeout: ReadTimeout: read timed out"), "timeout"),
        (PublishResult(Outcome.RETRY, "ConnectionError: refused"), "ConnectionError"),
        (PublishResult(Outcome.RETRY, None), "retry"),
    ],
)
def test_error_class_names_why_a_delivery_failed(result: PublishResult, name: str) -> None:
    assert error_class(result) == name


def test_every_signing_secret_is_masked_one_by_one() -> None:
    secrets = configured_secrets(
        {
            "RELAY_SIGNING_SECRET": "whsec-new-0123456789, whsec-old-0123456789",
            "RECEIVER_SIGNING_SECRET": "whsec-receiver-012345",
        }
    )
    record = logging.LogRecord(
        "t",
        logging.INFO,
        __file__,
        1,
        "old whsec-old-0123456789 mine whsec-receiver-012345",
        None,
        None,
    )
    line = JsonFormatter(secrets).format(record)
    assert "whsec" not in line and line.count("***") == 2
