"""`close_clients()`: the CLI closes the Firestore clients a command made before the process
exits, cancelling a call still in flight, so the exit never waits on it.

Before, a call that Ctrl-C interrupted stayed open in its channel; when the channel was
closed only by the interpreter's exit, gRPC's close waited for a polling thread that no longer
ran then, and `outbox relay` printed `error: interrupted` and hung for good (on a loaded
machine, 5 runs in 156 under six parallel stress loops)."""

from __future__ import annotations

import gc
import socket
import threading
import weakref
from collections.abc import Iterator

import pytest
from google.api_core import exceptions as google_exceptions
from google.cloud import firestore

from firestore_outbox.firestore.client import (
    close_clients,
    get_db_client,
    holding_clients,
    live_clients,
)
from firestore_outbox.firestore.settings import Settings

BOUND = 20.0  # seconds: far below the call's own 60 s deadline


@pytest.fixture
def silent_firestore() -> Iterator[socket.socket]:
    """A listening socket that never answers: every call to it hangs."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        server.settimeout(BOUND)
        yield server


def test_closing_cancels_a_call_in_flight(silent_firestore: socket.socket) -> None:
    host = f"127.0.0.1:{silent_firestore.getsockname()[1]}"
    before = live_clients()
    client = get_db_client(Settings(project_id="outbox-test", emulator_host=host))
    failures: list[BaseException] = []

    def count() -> None:
        try:
            client.collection("outbox").count().get(timeout=60)
        except BaseException as exc:  # what ended the call is the finding
            failures.append(exc)

    caller = threading.Thread(target=count, daemon=True)
    caller.start()
    connection, _ = silent_firestore.accept()  # the call is in flight
    try:
        assert close_clients(BOUND, keep=before)
        caller.join(BOUND)
    finally:
        connection.close()
    assert not caller.is_alive()
    [failure] = failures
    assert isinstance(failure, google_exceptions.Cancelled), repr(failure)


def test_the_clients_to_keep_stay_open(settings: Settings, db: firestore.Client) -> None:
    before = live_clients()
    made = get_db_client(settings)
    made.collection("outbox").document("x").get()
    assert close_clients(BOUND, keep=before)
    assert not db.collection("outbox").document("x").get().exists  # still open
    with pytest.raises(ValueError, match="Channel closed"):
        made.collection("outbox").document("x").get(retry=None)


def test_a_client_made_while_holding_outlives_its_last_reference_until_closed() -> None:
    # The CLI holds its command's clients: one freed as a Ctrl-C unwinds would close its
    # gRPC channel in `__del__`, in the main thread, waiting for good on an interrupted call.
    settings = Settings(project_id="outbox-test", emulator_host="127.0.0.1:9")
    with holding_clients() as held:
        made = weakref.ref(get_db_client(settings))
        gc.collect()
        assert made() is not None and held == [made()]
    free = weakref.ref(get_db_client(settings))  # outside the block: not held
    gc.collect()
    assert free() is None
    assert held == [made()]  # the block's list is the caller's until it lets go
