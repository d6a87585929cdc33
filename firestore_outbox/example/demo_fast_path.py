"""`outbox demo`'s last step: one order delivered by a nudge (the fast path), no timer."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from firestore_outbox.consumer import Received, Receiver, ReceiverAnswer
from firestore_outbox.example.services import create_new_order
from firestore_outbox.example.uow import OrderUnitOfWork
from firestore_outbox.producer import nudger_for

if TYPE_CHECKING:
    from google.cloud.firestore import Client

    from firestore_outbox.producer import Settings


def show_fast_path(
    db: Client, settings: Settings, downstream: Receiver, relay_environ: Mapping[str, str]
) -> float | None:
    """Commit one order with `OUTBOX_NUDGE=process` (the relay's settings of step 5,
    `relay_environ`) and print its commit-to-delivery time; None if not
    delivered within 30 s."""
    print("\n8. The fast path: one more order, and a nudge instead of the timer")
    print("   (OUTBOX_NUDGE=process: the nudged partition is drained in this process)")
    arrived = threading.Event()
    answer = downstream.respond

    def timed(request: Received) -> ReceiverAnswer:
        reply = answer(request)
        arrived.set()
        return reply

    downstream.respond = timed
    nudger = nudger_for(db, settings, {**relay_environ, "OUTBOX_NUDGE": "process"})
    if nudger is None:
        print("   the nudge could not be configured (see the log)")
        return None
    with OrderUnitOfWork(db, settings, nudger=nudger) as uow:
        order_id = create_new_order("customer-8", [{"productId": "sku-mug", "quantity": 3}], uow)
    committed = time.monotonic()
    delivered = arrived.wait(30)
    took_ms = (time.monotonic() - committed) * 1000
    nudger.close()
    downstream.respond = answer
    if not delivered:
        print(f"   order {order_id}: not delivered by the nudge (the timer would deliver it)")
        return None
    print(f"   order {order_id}: delivered {took_ms:.0f} ms after its commit returned")
    return took_ms
