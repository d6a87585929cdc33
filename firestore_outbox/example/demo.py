"""`outbox demo`: the whole path on a local emulator, from `create_new_order` to delivery."""

from __future__ import annotations

import dataclasses
import datetime
import secrets
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

import requests
from google.cloud.firestore import FieldFilter

from firestore_outbox import Configuration
from firestore_outbox.consumer import Receiver, ReceiverConfig
from firestore_outbox.errors import OutboxError
from firestore_outbox.example.demo_fast_path import show_fast_path
from firestore_outbox.example.order_counter import OrderCounter
from firestore_outbox.example.services import create_new_order
from firestore_outbox.example.uow import OrderUnitOfWork
from firestore_outbox.fields import AGGREGATE_ID
from firestore_outbox.function_compute import RelayFunction
from firestore_outbox.producer import Settings, get_db_client
from firestore_outbox.testing import EMULATOR_DEFAULT_PROJECT, FirestoreEmulator


def run_demo(settings: Settings) -> int:
    """Tell the story on stdout; return the exit code.

    Each run writes only to collections of its own (`demo-<run id>-orders`, `-outbox`,
    `-inbox`, `-order_counts`, and the relay's, named after its outbox: `-outbox_partitions`,
    `-outbox_partitions_mode`, `-outbox_health`) with an idempotency key of its own, so an
    emulator that holds other data can be used again and again: that data, a relay's leases
    and heartbeats included, is neither read, delivered nor changed.
    """
    run_id = uuid.uuid4().hex[:8]
    prefix = f"demo-{run_id}"
    signing_secret = secrets.token_urlsafe(24)  # shared by the relay and the downstream
    receiver_config = ReceiverConfig(
        signing_secrets=(signing_secret,),
        inbox_collection=f"{prefix}-inbox",
        counts_collection=f"{prefix}-order_counts",
    )
    settings = dataclasses.replace(
        settings, orders_collection=f"{prefix}-orders", outbox_collection=f"{prefix}-outbox"
    )
    with _on_emulator(settings) as settings, Receiver() as downstream:
        print(f"This run writes only to the collections {prefix}-*")
        db = get_db_client(settings)
        downstream.respond = OrderCounter(db, receiver_config)
        items = [
            {"productId": "sku-espresso", "quantity": 2},
            {"productId": "sku-mug", "quantity": 1},
        ]

        print("\n1. An order and its OrderCreated event, committed in one batch:")
        with OrderUnitOfWork(db, settings, nudger=False) as uow:
            first = create_new_order("customer-7", items, uow)
        print(f"   order {first}")

        print("\n2. With an idempotency key, then the same call again (a client retry):")
        key = f"checkout-7-{run_id}"
        with OrderUnitOfWork(db, settings, nudger=False) as uow:
            second = create_new_order("customer-7", items[:1], uow, idempotency_key=key)
        with OrderUnitOfWork(db, settings, nudger=False) as retry:
            again = create_new_order("customer-7", items[:1], retry, idempotency_key=key)
        print(f"   first call: order {second}; retry: order {again}, replayed={retry.replayed}")

        print("\n3. Rejected calls write nothing:")
        _show_rejection(db, settings, "customer-7", items, key)
        _show_rejection(db, settings, "customer-7", [{"productId": "sku-mug", "quantity": 0}])

        print("\n4. What Firestore now holds:")
        for order_id in (first, second):
            _show_order(db, settings, order_id)

        print(
            f"\n5. The relay, run as the Function Compute timer would, POSTs signed events to "
            f"the reference receiver at {downstream.url}"
        )
        # The relay's own configuration, as Function Compute would give it in the environment.
        relay_environ = {
            "FIRESTORE_EMULATOR_HOST": str(settings.emulator_host),
            "FIRESTORE_PROJECT_ID": settings.project_id or EMULATOR_DEFAULT_PROJECT,
            "DOWNSTREAM_SERVICE_URL": downstream.url,
            "RELAY_SIGNING_SECRET": signing_secret,
            "ORDERS_COLLECTION": settings.orders_collection,
            "OUTBOX_COLLECTION": settings.outbox_collection,
            "LOG_LEVEL": settings.log_level,
        }
        relay = RelayFunction(lambda: Configuration.load(relay_environ))
        summary = _invoke(relay)
        print(
            f"   summary: status={summary['status']} processed={summary['processed']} "
            f"failed={summary['failed']} retried={summary['retried']} "
            f"durationMs={summary['durationMs']}"
        )
        for request in downstream.received:
            headers = request.headers
            print(
                f"   received {headers['ce-type']} ce-id={headers['ce-id']} "
                f"ce-subject={headers['ce-subject']} body={request.body.decode()}"
            )
            print(
                f"     webhook-id: {headers['webhook-id']}  "
                f"webhook-signature: {headers['webhook-signature'][:20]}..."
            )

        print("\n6. After delivery:")
        for order_id in (first, second):
            _show_order(db, settings, order_id)
        rerun = _invoke(relay)
        print(f"   the next timer run finds nothing due: processed={rerun['processed']}")
        _show_consumer(db, downstream, receiver_config.counts_collection)
        fast = show_fast_path(db, settings, downstream, relay_environ)
    if summary["status"] != "ok" or summary["processed"] != 2:
        print(f"error: the relay did not deliver both events: {summary}")
        return 1
    if fast is None:
        print("error: the nudged order was not delivered")
        return 1
    return 0


@contextmanager
def _on_emulator(settings: Settings) -> Iterator[Settings]:
    if settings.emulator_host:
        print(f"Using the Firestore emulator at {settings.emulator_host}")
        yield settings
        return
    with FirestoreEmulator() as emulator:
        print(f"Started a Firestore emulator at {emulator.host_port} (stopped at the end)")
        yield dataclasses.replace(settings, emulator_host=emulator.host_port)


def _invoke(relay: RelayFunction) -> dict[str, Any]:
    """One timer invocation of the relay's Function Compute handler."""
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    event = f'{{"triggerTime": "{now}", "triggerName": "relay-timer", "payload": ""}}'
    context = SimpleNamespace(request_id=str(uuid.uuid4()), function=SimpleNamespace(timeout=60))
    result: dict[str, Any] = relay.handler(event.encode(), context)
    return result


def _show_consumer(db: Any, downstream: Receiver, counts_collection: str) -> None:
    print(
        "\n7. The receiver verified each signature and counted each order once, in the same "
        "batch as its inbox record:"
    )
    for count in db.collection(counts_collection).get():
        print(f"   {counts_collection}/{count.id}: orders={count.get('orders')}")
    first = downstream.received[0]
    again = requests.post(downstream.url, data=first.body, headers=first.headers, timeout=10)
    print(f"   the same delivery again (a relay crashed before settling): {again.text}")
    forged = requests.post(
        downstream.url, data=first.body.replace(b"sku-", b"SKU-"), headers=first.headers, timeout=10
    )
    print(f"   the same delivery with its body altered: HTTP {forged.status_code} {forged.text}")


def _show_rejection(
    db: Any, settings: Settings, customer: str, items: list[dict[str, Any]], key: str | None = None
) -> None:
    try:
        with OrderUnitOfWork(db, settings, nudger=False) as uow:
            create_new_order(customer, items, uow, idempotency_key=key)
    except OutboxError as exc:
        print(f"   {type(exc).__name__}: {exc}")
    else:
        raise AssertionError("the demo expected this call to be rejected")


def _show_order(db: Any, settings: Settings, order_id: str) -> None:
    order = db.collection(settings.orders_collection).document(order_id).get().to_dict()
    outbox = db.collection(settings.outbox_collection)
    events = outbox.where(filter=FieldFilter(AGGREGATE_ID, "==", order_id)).get()
    quantities = ", ".join(f"{i['productId']} x{i['quantity']}" for i in order["items"])
    print(f"   {settings.orders_collection}/{order_id}: {order['status']}, {quantities}")
    for event in events:
        data = event.to_dict()
        print(
            f"     {settings.outbox_collection}/{event.id}: {data['eventType']} "
            f"status={data['status']} attempts={data['attempts']} createdAt={data['createdAt']}"
        )
