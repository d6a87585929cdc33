"""`firestore_outbox.firestore.deadline`: every call of a client gets the deadline, and the one line
says it."""

from __future__ import annotations

from google.api_core import exceptions as google_exceptions
from google.api_core import gapic_v1

from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.firestore.deadline import unanswered, with_deadline
from firestore_outbox.firestore.settings import Settings


def test_every_method_of_the_client_defaults_to_the_deadline() -> None:
    # Pins google-cloud-firestore's private precomputed wrappers, which with_deadline replaces.
    db = get_db_client(Settings(emulator_host="127.0.0.1:9", project_id="outbox-test"))
    wrapped = with_deadline(db, 2.5)._firestore_api._transport._wrapped_methods
    assert len(wrapped) >= 10
    for method in wrapped.values():
        assert isinstance(method, gapic_v1.method._GapicCallable)
        assert method._timeout == 2.5
        assert method._retry is not None and method._retry.timeout == 2.5


def test_the_line_names_the_host_the_deadline_and_the_error_class() -> None:
    retry_error = google_exceptions.RetryError(
        "Timeout of 2.0s exceeded", cause=google_exceptions.ServiceUnavailable("secret-ish")
    )
    on_emulator = Settings(emulator_host="127.0.0.1:8080", firestore_timeout_seconds=2)
    assert unanswered(on_emulator, retry_error) == (
        "Firestore at 127.0.0.1:8080 did not answer within 2 s "
        "(RetryError after ServiceUnavailable)"
    )
    exceeded = google_exceptions.DeadlineExceeded("x")
    assert unanswered(Settings(), exceeded) == (
        "Firestore at firestore.googleapis.com did not answer within 10 s (DeadlineExceeded)"
    )
