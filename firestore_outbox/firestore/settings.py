"""`Settings`: the library's own settings, validated in one place.

Every problem is reported as a `ConfigError` that names the variable, never its value when
the value may be a secret. The values come from `firestore_outbox.config.Configuration`,
the one reader of the environment; this module reads nothing itself. It sits in the
`firestore` folder, below every folder that takes `Settings`, because what it holds is
mostly where the Firestore data lives.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field

from firestore_outbox.errors import ConfigError
from firestore_outbox.firestore.limits import check_collection_id
from firestore_outbox.numbers import Get, parse_seconds

DEFAULT_DATABASE = "(default)"
DEFAULT_ORDERS_COLLECTION = "orders"
DEFAULT_OUTBOX_COLLECTION = "outbox"
DEFAULT_FIRESTORE_TIMEOUT_SECONDS = 10.0

_HOST_PORT = re.compile(r"^(?P<host>\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):(?P<port>\d{1,5})$")
_PROJECT_ID = re.compile(r"^([a-z0-9.-]+:)?[a-z][a-z0-9-]{4,28}[a-z0-9]$")


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Library settings: where the data lives (Firestore, the collections), the Firestore
    timeout and the log level. `Configuration.load().settings` reads them; tests build them
    directly."""

    project_id: str | None = None
    database: str = DEFAULT_DATABASE
    emulator_host: str | None = None
    credentials_path: str | None = None
    credentials_json: str | None = field(default=None, repr=False)
    # GOOGLE_APPLICATION_CREDENTIALS: read after the two above (firestore.credentials).
    application_credentials: str | None = None
    orders_collection: str = DEFAULT_ORDERS_COLLECTION
    outbox_collection: str = DEFAULT_OUTBOX_COLLECTION
    log_level: str = "INFO"
    # How long a Firestore call of the operations commands or a commit may take, retries
    # included (the relay has its own, RELAY_FIRESTORE_TIMEOUT_SECONDS).
    firestore_timeout_seconds: float = DEFAULT_FIRESTORE_TIMEOUT_SECONDS

    def __post_init__(self) -> None:
        if self.project_id is not None and not _PROJECT_ID.match(self.project_id):
            raise ConfigError(
                "FIRESTORE_PROJECT_ID must be a Google Cloud project id "
                f"(6-30 lowercase letters, digits or hyphens), got {self.project_id!r}"
            )
        if not self.database:
            raise ConfigError("FIRESTORE_DATABASE must not be empty")
        if self.emulator_host is not None and not _valid_host_port(self.emulator_host):
            raise ConfigError(
                f"FIRESTORE_EMULATOR_HOST must be host:port, got {self.emulator_host!r}"
            )
        if self.credentials_path and self.credentials_json:
            raise ConfigError(
                "set only one of FIRESTORE_CREDENTIALS_PATH and FIRESTORE_CREDENTIALS_JSON"
            )
        for variable, value in (
            ("ORDERS_COLLECTION", self.orders_collection),
            ("OUTBOX_COLLECTION", self.outbox_collection),
        ):
            problem = check_collection_id(value)
            if problem:
                raise ConfigError(f"{variable} {problem}")
        if self.orders_collection == self.outbox_collection:
            raise ConfigError("ORDERS_COLLECTION and OUTBOX_COLLECTION must differ")
        timeout = self.firestore_timeout_seconds
        if isinstance(timeout, bool) or not 0 < timeout < float("inf"):
            raise ConfigError(
                "FIRESTORE_TIMEOUT_SECONDS must be a number of seconds more than 0, "
                f"got {timeout!r}"
            )
        if not isinstance(logging.getLevelName(self.log_level), int):
            raise ConfigError(
                "LOG_LEVEL must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL, "
                f"got {self.log_level!r}"
            )

    @classmethod
    def from_environment(cls, get: Get) -> Settings:
        """The settings the variables `get` looks up name (`Configuration` calls this)."""
        return cls(
            project_id=get("FIRESTORE_PROJECT_ID"),
            database=get("FIRESTORE_DATABASE") or DEFAULT_DATABASE,
            emulator_host=get("FIRESTORE_EMULATOR_HOST"),
            credentials_path=get("FIRESTORE_CREDENTIALS_PATH"),
            credentials_json=get("FIRESTORE_CREDENTIALS_JSON"),
            application_credentials=get("GOOGLE_APPLICATION_CREDENTIALS"),
            orders_collection=get("ORDERS_COLLECTION") or DEFAULT_ORDERS_COLLECTION,
            outbox_collection=get("OUTBOX_COLLECTION") or DEFAULT_OUTBOX_COLLECTION,
            log_level=(get("LOG_LEVEL") or "INFO").upper(),
            firestore_timeout_seconds=_seconds(
                "FIRESTORE_TIMEOUT_SECONDS", get("FIRESTORE_TIMEOUT_SECONDS")
            ),
        )


def _seconds(variable: str, text: str | None) -> float:
    if text is None:
        return DEFAULT_FIRESTORE_TIMEOUT_SECONDS
    return parse_seconds(variable, text)


def _valid_host_port(value: str) -> bool:
    match = _HOST_PORT.match(value)
    return match is not None and 0 < int(match.group("port")) < 65536
