"""`configure_telemetry` installs nothing unless an OTLP endpoint is configured."""

from __future__ import annotations

from firestore_outbox.config.secrets import configured_secrets
from firestore_outbox.observability.telemetry import configure_telemetry


def test_nothing_is_installed_without_an_endpoint_or_when_disabled() -> None:
    endpoint = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}
    assert configure_telemetry({}) is False
    assert configure_telemetry({**endpoint, "OTEL_SDK_DISABLED": "true"}) is False
    both_off = {"OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"}
    assert configure_telemetry({**endpoint, **both_off}) is False


def test_the_otlp_headers_values_are_masked_secrets() -> None:
    headers = "x-sls-otel-ak-id=LTAI5tExampleId,x-sls-otel-ak-secret=s3cr%3Det-Value-123,x=1"
    secrets = configured_secrets({"OTEL_EXPORTER_OTLP_HEADERS": headers})
    assert {"LTAI5tExampleId", "s3cr=et-Value-123"} <= set(secrets)
    assert "1" not in secrets  # too short to be a secret, and would mask every digit
