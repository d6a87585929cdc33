"""Shortcuts over `Configuration` for code that holds none: each reads the configuration at
this public edge (`Configuration.load(environ)`, or the process's `Configuration.default()`)
and hands the settings down. Nothing below `firestore_outbox.config` reads the environment.

    load_settings(environ)          # Configuration.load(environ).settings
    load_relay_config(environ)      # Configuration.load(environ).relay()
    get_db_client()                 # a client for Configuration.default().settings
    nudger_for(db, settings)        # the process's nudger for OUTBOX_NUDGE
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from firestore_outbox.config.loader import Configuration
from firestore_outbox.errors import OutboxError
from firestore_outbox.firestore import client

if TYPE_CHECKING:
    from google.cloud import firestore

    from firestore_outbox.consumer.receiver_settings import ReceiverConfig
    from firestore_outbox.firestore.settings import Settings
    from firestore_outbox.idempotency.config import IdempotencyConfig
    from firestore_outbox.nudge import Nudger
    from firestore_outbox.nudge.settings import NudgeSettings
    from firestore_outbox.relay.config import RelayConfig

__all__ = [
    "get_db_client",
    "load_idempotency_config",
    "load_nudge_settings",
    "load_receiver_config",
    "load_relay_config",
    "load_settings",
    "nudger_for",
]


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Read settings from `environ`, or from `os.environ` over a `.env` file in the cwd.

    Variables set in the process environment win over the `.env` file; the file is read,
    never copied into `os.environ`.
    """
    return Configuration.load(environ).settings


def load_relay_config(environ: Mapping[str, str] | None = None) -> RelayConfig:
    """Read the relay's variables like `load_settings()` does; `ConfigError` names the bad one."""
    return Configuration.load(environ).relay()


def load_receiver_config(
    environ: Mapping[str, str] | None = None, *, verify_signatures: bool = True
) -> ReceiverConfig:
    """Read the reference receiver's variables; `ConfigError` names a bad one, never a secret."""
    return Configuration.load(environ).receiver(verify_signatures=verify_signatures)


def load_idempotency_config(environ: Mapping[str, str] | None = None) -> IdempotencyConfig:
    """Read the `IDEMPOTENCY_*` variables; a malformed one raises `ConfigError` naming it."""
    return Configuration.load(environ).idempotency()


def load_nudge_settings(environ: Mapping[str, str] | None = None) -> NudgeSettings:
    """`OUTBOX_NUDGE` and `OUTBOX_NUDGE_URL`; `ConfigError` names a bad one."""
    return Configuration.load(environ).nudge()


def get_db_client(settings: Settings | None = None) -> firestore.Client:
    """Return a Firestore client; nothing is contacted until the first request.

    With `FIRESTORE_EMULATOR_HOST` set it talks to the emulator and needs no credentials;
    otherwise the service-account key (or any credentials file google-auth loads) from
    `FIRESTORE_CREDENTIALS_PATH` or `FIRESTORE_CREDENTIALS_JSON`, else the credentials file
    `GOOGLE_APPLICATION_CREDENTIALS` names (Workload Identity Federation: no key). Without
    `settings`, the process's configuration (the environment over `.env`, read once:
    `Configuration.default()`).
    """
    return client.get_db_client(settings or Configuration.default().settings)


def nudger_for(
    db: firestore.Client, settings: Settings, environ: Mapping[str, str] | None = None
) -> Nudger | None:
    """This process's `Nudger` for the configured `OUTBOX_NUDGE` (of `environ`, or the
    process's configuration), built on first use; None when off. A configuration that cannot
    be used is logged once and nudges nothing: the commit must not fail for it, and the timer
    delivers."""
    from firestore_outbox.nudge import shared_nudger

    configuration = Configuration.default() if environ is None else Configuration.load(environ)
    try:
        nudge: NudgeSettings | str = configuration.nudge()
    except OutboxError as exc:
        nudge = str(exc)
    return shared_nudger(nudge, db, settings)
