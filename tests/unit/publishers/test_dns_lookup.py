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


def test_hanging_lookups_hold_at_most_one_thread_per_name_and_never_more_than_the_cap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A fake of the resolver only: every lookup hangs until released.
    released = threading.Event()
    calls: list[str] = []

    def hanging(host: str, *_: object) -> list[object]:
        calls.append(host)
        released.wait(5)
        raise socket.gaierror(socket.EAI_AGAIN, "released")

    monkeypatch.setattr(socket, "getaddrinfo", hanging)
    names = [f"n{n % (dns.WORKERS + 2)}.test" for n in range(24)]
    try:
        for name in names:
            with pytest.raises(dns.ResolutionTimeout, match="deadline"):
                dns.resolve(name, 80, socket.AF_INET, 0.01)
        assert len(calls) == dns.WORKERS  # the rest share a lookup or wait in the queue
        workers = [t for t in threading.enumerate() if t.name.startswith("outbox-dns")]
        assert len(workers) <= dns.WORKERS
    finally:
        released.set()
