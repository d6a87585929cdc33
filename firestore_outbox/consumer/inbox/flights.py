"""`Flights`: one inbox transaction per record at a time in this process.

Firestore's transactions lock what they read until they end, and a commit waits for every
other transaction that read the same document (the emulator aborts it after 2 s: `Transaction
lock timeout`). Concurrent deliveries of one event, each retrying its transaction on
contention, therefore block each other's commits; fed by a sender that keeps redelivering,
that went on for good once it started (measured: 93 failed deliveries over 186 s, the last
event of a drill failing all its attempts). Taking turns in the process costs nothing (each
turn after the first reads SUCCEEDED at once) and leaves at most one contender per consumer
process, which the commits of the others can always outlast.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class Flights:
    """Per-key turns: `with flights.turn(key, timeout) as ours:` runs alone among this
    process's turns on `key`; `ours` is False when `timeout` s passed without a turn."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._turns: dict[str, tuple[threading.Lock, int]] = {}  # lock, threads using it

    @contextmanager
    def turn(self, key: str, timeout: float) -> Iterator[bool]:
        with self._guard:
            lock, users = self._turns.get(key, (threading.Lock(), 0))
            self._turns[key] = (lock, users + 1)
        ours = lock.acquire(timeout=max(timeout, 0.0))
        try:
            yield ours
        finally:
            if ours:
                lock.release()
            with self._guard:  # the last user forgets the key: memory stays bounded
                lock, users = self._turns[key]
                if users == 1:
                    del self._turns[key]
                else:
                    self._turns[key] = (lock, users - 1)
