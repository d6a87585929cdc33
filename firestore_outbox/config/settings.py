"""Settings from the environment and an optional `.env` file, validated in one place.

Every problem is reported as a `ConfigError` that names the variable, never its value when
the value may be a secret.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from dotenv import dotenv_values

from firestore_outbox.errors import ConfigError
from firestore_outbox.firestore.limits import check_collection_id
from firestore_outbox.numbers import parse_seconds

DEFAULT_DATABASE = "(default)"
DEFAULT_ORDERS_COLLECTION = "orders"
DEFAULT_OUTBOX_COLLECTION = "outbox"
DEFAULT_FIRESTORE_TIMEOUT_SECONDS = 10.0
# Read from the working directory only, never a parent's: a `.env` two directories up (another
# project's) silently configuring this one would be the surprise.
DOTENV_FILE = ".env"

_HOST_PORT = re.compile(r"^(?P<host>\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):(?P<port>\d{1,5})$")
_PROJECT_ID = re.compile(r"^([a-z0-9.-]+:)?[a-z][a-z0-9-]{4,28}[a-z0-9]$")


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Library settings; build with `load_settings()` or directly in tests."""

    project_id: str | None = None
    database: str = DEFAULT_DATABASE
    emulator_host: str | None = None
    credentials_path: str | None = None
    credentials_json: str | None = field(default=None, repr=False)
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


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Read settings from `environ`, or from `os.environ` over a `.env` file in the cwd.

    Variables set in the process environment win over the `.env` file; the file is read,
    never copied into `os.environ`.
    """
    get = env_reader(environ)
    return Settings(
        project_id=get("FIRESTORE_PROJECT_ID"),
        database=get("FIRESTORE_DATABASE") or DEFAULT_DATABASE,
        emulator_host=get("FIRESTORE_EMULATOR_HOST"),
        credentials_path=get("FIRESTORE_CREDENTIALS_PATH"),
        credentials_json=get("FIRESTORE_CREDENTIALS_JSON"),
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


def read_environment() -> Mapping[str, str]:
    """A read-only snapshot of `os.environ` over `./.env` (the working directory's only; the
    environment wins), read now. `firestore_outbox.config.loader.Configuration` holds one per
    invocation."""
    path = Path.cwd() / DOTENV_FILE
    file_values = {}
    if path.is_file():
        file_values = {k: v for k, v in dotenv_values(path).items() if v is not None}
    return MappingProxyType({**file_values, **os.environ})


# Snapshots in use (innermost last): code that reads "the environment" without being handed a
# snapshot (the log masking, a publisher's secrets) reads the invocation's, not `.env` again.
_in_use: list[Mapping[str, str]] = []


@contextlib.contextmanager
def environment_in_use(environ: Mapping[str, str]) -> Iterator[None]:
    """Within the block, `env_reader()` (and every loader given no `environ`) reads `environ`."""
    _in_use.append(environ)
    try:
        yield
    finally:
        _in_use.remove(environ)


def env_reader(environ: Mapping[str, str] | None = None) -> Callable[[str], str | None]:
    """A lookup over `environ`; when None, over the snapshot in use (`environment_in_use`)
    or else a fresh `read_environment()`.

    The lookup strips whitespace and turns empty values into None.
    """
    if environ is None:
        environ = _in_use[-1] if _in_use else read_environment()
    values = environ

    def get(name: str) -> str | None:
        return (values.get(name) or "").strip() or None

    return get


@functools.cache
def default_settings() -> Settings:
    """`load_settings()` read once per process: what `FirestoreUnitOfWork(db)`, the
    repositories and `get_db_client()` use when no settings are passed."""
    return load_settings()


def _valid_host_port(value: str) -> bool:
    match = _HOST_PORT.match(value)
    return match is not None and 0 < int(match.group("port")) < 65536
