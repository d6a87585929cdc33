"""Which configured values are secrets, for masking logs and error lines
(`Configuration.secrets()`): it knows every variable that holds one, so it sits with the
configuration, above the logs, the publishers and the relay that mask what it finds."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import unquote

from firestore_outbox.config.environment import env_reader
from firestore_outbox.firestore.credentials import SECRET_FIELDS
from firestore_outbox.observability.otlp_settings import OTLP_ENDPOINTS
from firestore_outbox.publishers.http.urls import url_secrets

__all__ = ["SECRET_LIST_VARIABLES", "SECRET_VARIABLES", "configured_secrets"]

# Variables whose values are secrets wherever they turn up (the downstream URL's
# credential-bearing parts are added by `configured_secrets`).
SECRET_VARIABLES = (
    "FIRESTORE_CREDENTIALS_JSON",
    "ALIBABA_CLOUD_ACCESS_KEY_SECRET",
    "ALIBABA_CLOUD_SECURITY_TOKEN",
    "RELAY_ROCKETMQ_SECRET_KEY",
    "RELAY_KAFKA_PASSWORD",
    "OUTBOX_CONSOLE_TOKEN",
    "WATCHDOG_WEBHOOK_SECRET",
)
# Comma-separated lists of secrets (several during a rotation): each one is masked.
SECRET_LIST_VARIABLES = (
    "RELAY_SIGNING_SECRET",
    "RECEIVER_SIGNING_SECRET",
    "OUTBOX_NUDGE_SECRET",
    "IDEMPOTENCY_ENCRYPTION_KEYS",
)


def configured_secrets(environ: Mapping[str, str]) -> list[str]:
    """The secrets set in `environ`: the secret variables, each signing secret, the secrets of
    the credentials file (a service-account key's private key, an `authorized_user` file's
    client secret and refresh token), the downstream URL's token, the AMQP broker URL's
    password, the OTLP headers' values."""
    get = env_reader(environ)
    secrets = [value for value in map(get, SECRET_VARIABLES) if value]
    for value in map(get, SECRET_LIST_VARIABLES):
        parts = [part.strip() for part in (value or "").split(",") if part.strip()]
        # keyId:key pairs (IDEMPOTENCY_ENCRYPTION_KEYS): the key alone is a secret too.
        secrets += parts + [p.partition(":")[2] for p in parts if len(p.partition(":")[2]) >= 16]
    key_text = get("FIRESTORE_CREDENTIALS_JSON")
    key_path = get("FIRESTORE_CREDENTIALS_PATH") or get("GOOGLE_APPLICATION_CREDENTIALS")
    if key_text is None and key_path is not None:
        try:
            key_text = Path(key_path).read_text()
        except OSError:
            key_text = None
    secrets += _key_secrets(key_text)
    urls = (
        "DOWNSTREAM_SERVICE_URL",
        "RELAY_AMQP_URL",
        "WATCHDOG_WEBHOOK_URL",
        *OTLP_ENDPOINTS,
    )  # ARMS: token in path
    for url in map(get, urls):
        if url:
            secrets += url_secrets(url)
    # OTLP headers carry an SLS AccessKey secret or an ARMS token: every value is masked.
    for header in (get("OTEL_EXPORTER_OTLP_HEADERS") or "").split(","):
        value = unquote(header.partition("=")[2].strip())
        if len(value) >= 8:
            secrets.append(value)
    return secrets


def _key_secrets(key_text: str | None) -> list[str]:
    try:
        key = json.loads(key_text or "")
    except ValueError:
        return []
    if not isinstance(key, dict):
        return []
    # A service-account key's private key, an authorized_user file's client secret and
    # refresh token (firestore.credentials.SECRET_FIELDS).
    secrets = [str(key[name]) for name in SECRET_FIELDS if key.get(name)]
    # A line of the PEM body alone is still part of the key.
    lines = str(key.get("private_key", "")).splitlines()
    return secrets + [line for line in lines if len(line) >= 16 and "-----" not in line]
