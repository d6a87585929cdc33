"""Structured logs: one JSON object per line, with every configured secret masked.

Alibaba Cloud Simple Log Service (where Function Compute's `logConfig` sends a function's
output) indexes a JSON line field by field, so an operator can query `event: relay.summary`
or chart `lagMs` without parsing text. A record logged with `log_event` carries its fields;
any other record (a library's, an exception) becomes `{time, level, logger, message}`.

    {"event": "relay.summary", "level": "INFO", "logger": "firestore_outbox.relay",
     "message": "relay summary", "processed": 12, "failed": 0, "lagMs": 840, ...}
"""

from __future__ import annotations

import datetime
import json
import logging
import sys
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from firestore_outbox.config.settings import env_reader
from firestore_outbox.observability.masking import (
    REDACTED as REDACTED,  # re-exported: older imports name it here
)
from firestore_outbox.observability.masking import masker
from firestore_outbox.observability.otlp_settings import OTLP_ENDPOINTS
from firestore_outbox.publishers.http.urls import url_secrets

# Variables whose values are secrets wherever they turn up (the downstream URL's
# credential-bearing parts are added by `configured_secrets`).
SECRET_VARIABLES = (
    "FIRESTORE_CREDENTIALS_JSON",
    "ALIBABA_CLOUD_ACCESS_KEY_SECRET",
    "ALIBABA_CLOUD_SECURITY_TOKEN",
    "RELAY_ROCKETMQ_SECRET_KEY",
    "OUTBOX_CONSOLE_TOKEN",
)
# Comma-separated lists of secrets (several during a rotation): each one is masked.
SECRET_LIST_VARIABLES = (
    "RELAY_SIGNING_SECRET",
    "RECEIVER_SIGNING_SECRET",
    "IDEMPOTENCY_ENCRYPTION_KEYS",
)


def log_event(
    logger: logging.Logger,
    level: int,
    event: str,
    message: str,
    /,
    *,
    exc_info: bool = False,
    **fields: Any,
) -> None:
    """Log `message` with `event` and `fields` as top-level keys of the JSON line."""
    logger.log(level, message, exc_info=exc_info, extra={"structured": {"event": event, **fields}})


class JsonFormatter(logging.Formatter):
    """Formats a record as one line of JSON; every spelling of each of `secrets` (see
    `firestore_outbox.observability.masking.Masker`) is replaced by `***`.

    Masking here, in the formatter every handler of the root logger gets, covers every record
    at every level, a library's too (urllib3 names the request target at DEBUG)."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        self._mask = masker(secrets)  # JSON's escapes included: it masks the finished line

    def format(self, record: logging.LogRecord) -> str:
        moment = datetime.datetime.fromtimestamp(record.created, datetime.timezone.utc)
        entry: dict[str, Any] = {
            "time": moment.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        structured = getattr(record, "structured", None)
        if isinstance(structured, Mapping):
            entry.update({k: v for k, v in structured.items() if k not in entry})
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        text = json.dumps(entry, default=str, ensure_ascii=False, separators=(",", ":"))
        return self._mask(text)


def configure_logging(
    secrets: Iterable[str] = (), level: str | None = None, *, thread_exceptions: bool = False
) -> None:
    """Make every handler of the root logger write JSON lines (adding one on stderr if there
    is none): Function Compute's own handler included, so its lines reach Log Service whole.

    For a process's entry point: it configures the process's logging (the root logger's
    handlers and level, warnings captured, the "google" loggers kept on the root: below).
    `thread_exceptions`: also replace `threading.excepthook`, so a thread's uncaught
    exception (a library's listener thread, say) is a JSON line rather than a bare traceback;
    off unless asked (the `outbox` CLI and the Function Compute handlers ask)."""
    logging.captureWarnings(True)  # other warnings become JSON lines too
    if thread_exceptions:
        threading.excepthook = _log_thread_exception
    root = logging.getLogger()
    if level is not None:
        root.setLevel(level)
    if not root.handlers:
        root.addHandler(logging.StreamHandler(sys.stderr))
    formatter = JsonFormatter(secrets)
    for handler in root.handlers:
        handler.setFormatter(formatter)
    # google-api-core cuts the "google" loggers off from the root (propagate=False, so their
    # warnings print bare through logging.lastResort) when a client is created, unless they
    # were configured: a level marks them configured and keeps their records in these lines.
    google = logging.getLogger("google")
    google.propagate = True
    if google.level == logging.NOTSET:
        google.setLevel(root.getEffectiveLevel())


def _log_thread_exception(args: threading.ExceptHookArgs) -> None:
    if args.exc_type is SystemExit:
        return  # as threading's own hook: a thread that exits this way is not an error
    thread = args.thread.name if args.thread is not None else None
    logging.getLogger("threading").error(
        f"uncaught exception in thread {thread}",
        exc_info=(args.exc_type, args.exc_value, args.exc_traceback),  # type: ignore[arg-type]
        extra={
            "structured": {
                "event": "thread.exception",
                "thread": thread,
                "errorClass": args.exc_type.__name__,
            }
        },
    )


def configured_secrets(environ: Mapping[str, str] | None = None) -> list[str]:
    """The secrets set in `environ` (default: the environment over `.env`): the secret
    variables, each signing secret, the private key of the service-account key, the
    downstream URL's token, the AMQP broker URL's password, the OTLP headers' values."""
    get = env_reader(environ)
    secrets = [value for value in map(get, SECRET_VARIABLES) if value]
    for value in map(get, SECRET_LIST_VARIABLES):
        parts = [part.strip() for part in (value or "").split(",") if part.strip()]
        # keyId:key pairs (IDEMPOTENCY_ENCRYPTION_KEYS): the key alone is a secret too.
        secrets += parts + [p.partition(":")[2] for p in parts if len(p.partition(":")[2]) >= 16]
    key_text = get("FIRESTORE_CREDENTIALS_JSON")
    key_path = get("FIRESTORE_CREDENTIALS_PATH")
    if key_text is None and key_path is not None:
        try:
            key_text = Path(key_path).read_text()
        except OSError:
            key_text = None
    secrets += _key_secrets(key_text)
    urls = ("DOWNSTREAM_SERVICE_URL", "RELAY_AMQP_URL", *OTLP_ENDPOINTS)  # ARMS: token in path
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
    secrets = [str(key[name]) for name in ("private_key", "private_key_id") if key.get(name)]
    # A line of the PEM body alone is still part of the key.
    lines = str(key.get("private_key", "")).splitlines()
    return secrets + [line for line in lines if len(line) >= 16 and "-----" not in line]
