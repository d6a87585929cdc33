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
from typing import Any

from firestore_outbox.masking import (
    REDACTED as REDACTED,  # re-exported: older imports name it here
)
from firestore_outbox.masking import masker


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
    `firestore_outbox.masking.Masker`) is replaced by `***`.

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
