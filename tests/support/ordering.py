"""Per-aggregate sequences for the order tests: events numbered per aggregate, written over
several units of work, and a downstream that applies them the way an ordered consumer would."""

from __future__ import annotations

import random
import threading
import time
from collections import defaultdict

from google.cloud import firestore

from app.uow import FirestoreUnitOfWork
from firestore_outbox.consumer.receiver import Received, ReceiverAnswer
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.nudge import Nudger


class Sequences:
    """A downstream that answers 503 at `failure_rate` and is slow at `slow_rate`; otherwise
    applies each aggregate's events in sequence: the next number is applied, an earlier one
    is a duplicate, a later one a violation (an event overtook one before it)."""

    def __init__(
        self,
        failure_rate: float,
        rng: random.Random,
        *,
        slow_rate: float = 0.0,
        slow_seconds: float = 0.0,
    ) -> None:
        self.accepted: dict[str, list[int]] = defaultdict(list)
        self.applied: dict[str, int] = defaultdict(int)
        self.duplicates = self.violations = 0
        self._lock = threading.Lock()
        self._rate, self._rng = failure_rate, rng
        self._slow_rate, self._slow_seconds = slow_rate, slow_seconds

    def __call__(self, request: Received) -> ReceiverAnswer:
        body = request.json()
        with self._lock:
            roll, slow = self._rng.random(), self._rng.random() < self._slow_rate
        if roll < self._rate:
            return ReceiverAnswer(503)
        if slow:
            time.sleep(self._slow_seconds)
        aggregate, seq = body["aggregate"], body["seq"]
        with self._lock:
            self.accepted[aggregate].append(seq)
            if seq == self.applied[aggregate]:
                self.applied[aggregate] += 1
            elif seq < self.applied[aggregate]:
                self.duplicates += 1
            else:
                self.violations += 1
        return ReceiverAnswer(200)


def add_steps(db: firestore.Client, settings: Settings, owners: list[str]) -> list[str]:
    """One unit of work adding a step for each of `owners`, numbered per aggregate from 0."""
    counts: dict[str, int] = defaultdict(int)
    ids = []
    with FirestoreUnitOfWork(db, settings) as uow:
        for owner in owners:
            payload = {"aggregate": owner, "seq": counts[owner]}
            counts[owner] += 1
            event = {"eventType": "Step", "aggregateType": "agg", "aggregateId": owner}
            ids.append(uow.outbox.add({**event, "payload": payload}))
    return ids


def add_sequences(
    db: firestore.Client,
    settings: Settings,
    counts: dict[str, int],
    *,
    aggregates: int,
    batches: int,
    per_batch: int,
    nudger: Nudger | bool = False,
) -> None:
    """Every aggregate gets `batches` units of work of `per_batch` events, interleaved with
    the other aggregates' (each also carries the next aggregate's next event); `counts` holds
    each aggregate's next number and is brought up to date. `nudger`: the units of work's."""
    names = [f"agg-{n}" for n in range(aggregates)]
    for _ in range(batches):
        for n, name in enumerate(names):
            with FirestoreUnitOfWork(db, settings, nudger=nudger) as uow:
                for owner in [name] * per_batch + [names[(n + 1) % aggregates]]:
                    counts.setdefault(owner, 0)
                    payload = {"aggregate": owner, "seq": counts[owner]}
                    event = {"eventType": "Step", "aggregateType": "agg", "aggregateId": owner}
                    uow.outbox.add({**event, "payload": payload})
                    counts[owner] += 1
