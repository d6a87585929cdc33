"""The producer's conveniences for code that holds no configuration: a Firestore client and
the process's nudger, from the process's configuration (`firestore_outbox.edge.default()`:
the environment over `./.env`, read once per process).

    get_db_client()            # a client for the process's Settings
    nudger_for(db, settings)   # the process's nudger for OUTBOX_NUDGE, or None
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from firestore_outbox import edge
from firestore_outbox.errors import OutboxError
from firestore_outbox.firestore import client
from firestore_outbox.nudge import Nudger, shared_nudger

if TYPE_CHECKING:
    from google.cloud import firestore

    from firestore_outbox.firestore.settings import Settings
    from firestore_outbox.nudge.settings import NudgeSettings

__all__ = ["get_db_client", "nudger_for"]


def get_db_client(settings: Settings | None = None) -> firestore.Client:
    """Return a Firestore client; nothing is contacted until the first request.

    With `FIRESTORE_EMULATOR_HOST` set it talks to the emulator and needs no credentials;
    otherwise the service-account key (or any credentials file google-auth loads) from
    `FIRESTORE_CREDENTIALS_PATH` or `FIRESTORE_CREDENTIALS_JSON`, else the credentials file
    `GOOGLE_APPLICATION_CREDENTIALS` names (Workload Identity Federation: no key). Without
    `settings`, the process's configuration (the environment over `.env`, read once).
    """
    return client.get_db_client(settings or edge.default().settings)


def nudger_for(
    db: firestore.Client, settings: Settings, environ: Mapping[str, str] | None = None
) -> Nudger | None:
    """This process's `Nudger` for the configured `OUTBOX_NUDGE` (of `environ`, or the
    process's configuration), built on first use; None when off. A configuration that cannot
    be used is logged once and nudges nothing: the commit must not fail for it, and the timer
    delivers."""
    configuration = edge.default() if environ is None else edge.load(environ)
    try:
        nudge: NudgeSettings | str = configuration.nudge()
    except OutboxError as exc:
        nudge = str(exc)
    return shared_nudger(nudge, db, settings)
