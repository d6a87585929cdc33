"""`firestore_outbox.publishers.http.dns.resolve` shares one lookup per name between callers and
forgets it once it is
answered. When the answer was already there by the time the lookup was registered, the
forgetting ran at once on the caller's thread while the caller still held the registry's lock:
the caller deadlocked (seen in the AMQP publisher's tests, one run in several)."""

from __future__ import annotations

import concurrent.futures
import socket
import threading
from typing import Any

import pytest

from firestore_outbox.publishers.http import dns


class AnsweredAtOnce:
    """An executor whose lookups are answered before `submit` returns (a name in /etc/hosts
    on an idle machine can be that fast)."""

    def submit(self, fn: Any, *args: Any) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        future.set_result(fn(*args))
        return future


def test_a_lookup_answered_before_it_is_registered_returns_and_is_forgotten(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(dns, "_pool", AnsweredAtOnce())
    answers: list[Any] = []
    caller = threading.Thread(
        target=lambda: answers.append(dns.resolve("localhost", 80, socket.AF_INET, 5.0)),
        daemon=True,  # a deadlocked caller must not keep the test run alive
    )
    caller.start()
    caller.join(timeout=10)

    assert not caller.is_alive(), "resolve() deadlocked on its own lock"
    assert answers and answers[0][0][4][1] == 80
    assert ("localhost", 80, socket.AF_INET) not in dns._lookups
