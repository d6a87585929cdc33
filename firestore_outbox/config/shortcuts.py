"""Shortcuts over `Configuration` for code that holds none: each reads the configuration at
this public edge (`Configuration.load(environ)`, or the process's `Configuration.default()`)
and hands the settings down. Nothing below `firestore_outbox.config` reads the environment;
the conveniences the lower folders offer themselves (`get_db_client`, `nudger_for`, the
`load_*_config` of the relay, the receiver and the front door) ask `firestore_outbox.edge`,
which points here, and are the same functions as these.

    load_settings(environ)          # Configuration.load(environ).settings
    load_relay_config(environ)      # Configuration.load(environ).relay()
    get_db_client()                 # a client for Configuration.default().settings
    nudger_for(db, settings)        # the process's nudger for OUTBOX_NUDGE
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from firestore_outbox.config.loader import Configuration
from firestore_outbox.consumer.receiver_settings import load_receiver_config
from firestore_outbox.idempotency.config import load_idempotency_config
from firestore_outbox.producer.defaults import get_db_client, nudger_for
from firestore_outbox.relay.config import load_relay_config

if TYPE_CHECKING:
    from firestore_outbox.firestore.settings import Settings
    from firestore_outbox.nudge.settings import NudgeSettings

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


def load_nudge_settings(environ: Mapping[str, str] | None = None) -> NudgeSettings:
    """`OUTBOX_NUDGE` and `OUTBOX_NUDGE_URL`; `ConfigError` names a bad one."""
    return Configuration.load(environ).nudge()
