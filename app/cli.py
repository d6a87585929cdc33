"""The `outbox` command: `outbox demo` and `outbox emulator`."""

from __future__ import annotations

import argparse
import dataclasses
import logging
import signal
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from google.cloud.firestore import FieldFilter

from app.config import Settings, load_settings
from app.emulator import FirestoreEmulator
from app.errors import OutboxError
from app.firestore_client import get_db_client
from app.services import create_new_order
from app.uow import FirestoreUnitOfWork


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="outbox", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser(
        "demo",
        help="write orders and their outbox events on the local Firestore emulator and show them",
    )
    emulator = commands.add_parser("emulator", help="run a Firestore emulator until Ctrl-C")
    emulator.add_argument("--port", type=int, default=None, help="default: a free port")
    args = parser.parse_args(argv)
    try:
        settings = load_settings()
        logging.basicConfig(level=settings.log_level, format="%(levelname)s %(name)s: %(message)s")
        if args.command == "demo":
            return _demo(settings)
        return _run_emulator(args.port)
    except OutboxError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


@contextmanager
def _on_emulator(settings: Settings) -> Iterator[Settings]:
    if settings.emulator_host:
        print(f"Using the Firestore emulator at {settings.emulator_host}")
        yield settings
        return
    with FirestoreEmulator() as emulator:
        print(f"Started a Firestore emulator at {emulator.host_port} (stopped at the end)")
        yield dataclasses.replace(settings, emulator_host=emulator.host_port)


def _demo(settings: Settings) -> int:
    with _on_emulator(settings) as settings:
        db = get_db_client(settings)
        items = [
            {"productId": "sku-espresso", "quantity": 2},
            {"productId": "sku-mug", "quantity": 1},
        ]

        print("\n1. An order and its OrderCreated event, committed in one batch:")
        with FirestoreUnitOfWork(db, settings) as uow:
            first = create_new_order("customer-7", items, uow)
        print(f"   order {first}")

        print("\n2. With an idempotency key, then the same call again (a client retry):")
        key = "checkout-7-attempt"
        with FirestoreUnitOfWork(db, settings) as uow:
            second = create_new_order("customer-7", items[:1], uow, idempotency_key=key)
        with FirestoreUnitOfWork(db, settings) as retry:
            again = create_new_order("customer-7", items[:1], retry, idempotency_key=key)
        print(f"   first call: order {second}; retry: order {again}, replayed={retry.replayed}")

        print("\n3. Rejected calls write nothing:")
        _show_rejection(db, settings, "customer-7", items, key)
        _show_rejection(db, settings, "customer-7", [{"productId": "sku-mug", "quantity": 0}])

        print("\n4. What Firestore now holds:")
        for order_id in (first, second):
            _show_order(db, settings, order_id)
    return 0


def _show_rejection(
    db: Any, settings: Settings, customer: str, items: list[dict[str, Any]], key: str | None = None
) -> None:
    try:
        with FirestoreUnitOfWork(db, settings) as uow:
            create_new_order(customer, items, uow, idempotency_key=key)
    except OutboxError as exc:
        print(f"   {type(exc).__name__}: {exc}")
    else:
        raise AssertionError("the demo expected this call to be rejected")


def _show_order(db: Any, settings: Settings, order_id: str) -> None:
    order = db.collection(settings.orders_collection).document(order_id).get().to_dict()
    outbox = db.collection(settings.outbox_collection)
    events = outbox.where(filter=FieldFilter("aggregateId", "==", order_id)).get()
    quantities = ", ".join(f"{i['productId']} x{i['quantity']}" for i in order["items"])
    print(f"   {settings.orders_collection}/{order_id}: {order['status']}, {quantities}")
    for event in events:
        data = event.to_dict()
        print(
            f"     {settings.outbox_collection}/{event.id}: {data['eventType']} "
            f"status={data['status']} attempts={data['attempts']} createdAt={data['createdAt']}"
        )


def _run_emulator(port: int | None) -> int:
    with FirestoreEmulator(port=port) as emulator:
        print(f"export FIRESTORE_EMULATOR_HOST={emulator.host_port}", flush=True)
        try:
            while True:
                signal.pause()
        except KeyboardInterrupt:
            return 0


if __name__ == "__main__":
    sys.exit(main())
