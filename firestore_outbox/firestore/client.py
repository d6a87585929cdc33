"""`get_db_client()`: a Firestore client for the emulator or for Google credentials."""

from __future__ import annotations

import contextlib
import logging
import threading
import weakref
from collections.abc import Collection, Iterator

from google.auth.credentials import AnonymousCredentials
from google.cloud import firestore

from firestore_outbox.errors import ConfigError
from firestore_outbox.firestore.credentials import load_credentials
from firestore_outbox.firestore.raw import gapic_if_made, point_at_emulator
from firestore_outbox.firestore.settings import Settings

logger = logging.getLogger(__name__)

EMULATOR_DEFAULT_PROJECT = "demo-firestore-outbox"

# Every client made here and still alive, for `close_clients()`.
_made: weakref.WeakSet[firestore.Client] = weakref.WeakSet()
# While `holding_clients()` runs: the clients made meanwhile, held strongly (see there).
_held: list[list[firestore.Client]] = []


def _made_now(client: firestore.Client) -> firestore.Client:
    _made.add(client)
    for held in _held:
        held.append(client)
    return client


@contextlib.contextmanager
def holding_clients() -> Iterator[list[firestore.Client]]:
    """Hold every client `get_db_client()` makes inside the block until the caller has
    closed them (`close_clients`).

    For the CLI: a command interrupted by Ctrl-C leaves its call in flight, and the client is
    freed as the exception unwinds; the freed gRPC channel's `__del__` then closes it in the
    main thread and waits, with no timeout, for the cancelled call to be cleared, which never
    happens while the server stays silent (py-spy: `__del__ (grpc/_channel.py)` under
    `run_guarded`). Held, the client is closed by `close_clients` on a thread of its own,
    waited for a bounded time."""
    held: list[firestore.Client] = []
    _held.append(held)
    try:
        yield held
    finally:
        _held.remove(held)


def get_db_client(settings: Settings) -> firestore.Client:
    """A Firestore client for `settings`; nothing is contacted until the first request.

    With `emulator_host` set it talks to the emulator and needs no credentials; otherwise it
    uses the credentials `load_credentials` builds: a service-account key from
    `credentials_json` or `credentials_path`, or any credentials file google-auth loads from
    those or `application_credentials` (`GOOGLE_APPLICATION_CREDENTIALS`). (The public
    `firestore_outbox.get_db_client` reads the settings when given none.)
    """
    if settings.emulator_host:
        project = settings.project_id or EMULATOR_DEFAULT_PROJECT
        client = firestore.Client(
            project=project,
            database=settings.database,
            credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
        )
        point_at_emulator(client, settings.emulator_host)
        logger.debug("using the Firestore emulator at %s", settings.emulator_host)
        return _made_now(client)
    credentials, named = load_credentials(settings)
    real_project = settings.project_id or named
    if not real_project:
        raise ConfigError(
            "FIRESTORE_PROJECT_ID is not set and the credentials name no project "
            "(a service-account key's project_id; other credentials files have none)"
        )
    client = firestore.Client(
        project=real_project, database=settings.database, credentials=credentials
    )
    return _made_now(client)


def live_clients() -> weakref.WeakSet[firestore.Client]:
    """The clients `get_db_client()` made that are still alive, as of now."""
    return weakref.WeakSet(_made)


def close_clients(timeout: float, *, keep: Collection[firestore.Client] = ()) -> bool:
    """Close the gRPC channel of every client `get_db_client()` made that is still alive (but
    those in `keep`), cancelling the calls still in flight; False if that did not finish
    within `timeout` s.

    For a process about to exit (the CLI). A call left in flight (one a Ctrl-C interrupted)
    is reaped by a gRPC polling thread once cancelled; left to the interpreter's exit, the
    channel's close waited for a thread that no longer runs then, and the process hung for
    good after its last line. gRPC's close has no timeout of its own: it runs on a daemon
    thread, waited for at most `timeout`; one that does not finish holds the channels from
    that thread, so the exit does not try to close them again."""
    apis = [gapic_if_made(c) for c in list(_made) if c not in keep]  # None: unused
    channels = [api.transport for api in apis if api is not None]
    if not channels:
        return True
    closing = threading.Thread(
        target=lambda: [channel.close() for channel in channels],
        name="firestore-close",
        daemon=True,
    )
    closing.start()
    closing.join(timeout)
    return not closing.is_alive()
