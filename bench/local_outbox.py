"""What the in-process benchmarks share: an outbox on the local Firestore emulator (or the
one `FIRESTORE_EMULATOR_HOST` names), a local receiver answering 200, and due events written
by the unit of work, each of an aggregate of its own."""

from __future__ import annotations

import os
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

from firestore_outbox import FirestoreUnitOfWork, Settings, get_db_client
from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.testing.emulator import FirestoreEmulator

SEED_BATCH = 500  # events per unit of work: the most writes one batch takes


@dataclass
class LocalOutbox:
    settings: Settings
    db: Any
    receiver: Receiver


def local_outbox(stack: ExitStack, project: str) -> LocalOutbox:
    """An outbox of project `project` and a receiver, both closed with `stack`."""
    host = os.environ.get("FIRESTORE_EMULATOR_HOST")
    if not host:
        host = stack.enter_context(FirestoreEmulator()).host_port
    receiver = stack.enter_context(Receiver())
    settings = Settings(project_id=project, emulator_host=host)
    return LocalOutbox(settings, get_db_client(settings), receiver)


def seed(outbox: LocalOutbox, count: int) -> None:
    """`count` due `OrderCreated` events, each of an aggregate of its own."""
    for start in range(0, count, SEED_BATCH):
        with FirestoreUnitOfWork(outbox.db, outbox.settings) as uow:
            for n in range(start, min(count, start + SEED_BATCH)):
                uow.outbox.add(
                    {
                        "eventType": "OrderCreated",
                        "aggregateType": "order",
                        "aggregateId": f"order-{n}",
                        "payload": {"orderId": f"order-{n}", "n": n},
                    }
                )
