"""`Flights`: per-key turns in one process, bounded waits, and no key kept once unused."""

from __future__ import annotations

import threading

from firestore_outbox.consumer.inbox.flights import Flights


def test_a_second_turn_on_a_key_waits_and_gives_up_after_its_timeout() -> None:
    flights = Flights()
    with flights.turn("a", 1.0) as first:
        assert first
        got: list[bool] = []
        waiter = threading.Thread(target=lambda: got.append(_try(flights, "a", 0.05)))
        waiter.start()
        waiter.join()
        assert got == [False]  # "a" is taken: the other thread gave up
        assert _try(flights, "b", 0.05)  # another key is free
    assert _try(flights, "a", 0.05)  # free again once the first turn ended
    assert flights._turns == {}  # nothing kept for keys no one uses


def _try(flights: Flights, key: str, timeout: float) -> bool:
    with flights.turn(key, timeout) as ours:
        return ours
