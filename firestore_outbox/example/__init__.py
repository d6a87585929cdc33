"""The reference order application (the design card's application layer), written on the
library's public names only, as an application of yours would be; `outbox demo` runs it.

    from firestore_outbox import get_db_client
    from firestore_outbox.example import OrderUnitOfWork, create_new_order

    with OrderUnitOfWork(get_db_client()) as uow:       # one WriteBatch, committed on exit
        order_id = create_new_order("customer-7", [{"productId": "sku-1", "quantity": 2}], uow)

`create_new_order` queues the order and its `OrderCreated` event on the unit of work;
`OrderUnitOfWork` is the library's `FirestoreUnitOfWork` with `uow.orders` beside
`uow.outbox`; `make_api` is the HTTP order API behind the Idempotency-Key middleware
(`outbox api`); `OrderCounter` the reference consumer (`outbox receiver`); `run_demo` the
demo. A repository checkout also has them under the design card's names (`app.services`,
`app.uow`, ...). Names load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from firestore_outbox._lazy import lazy_exports

if TYPE_CHECKING:
    from firestore_outbox.example.api import make_api, make_orders_app
    from firestore_outbox.example.demo import run_demo
    from firestore_outbox.example.order_counter import OrderCounter
    from firestore_outbox.example.orders import (
        ORDER_AGGREGATE,
        ORDER_CREATED,
        InvalidOrder,
        NewOrder,
        OrderStatus,
    )
    from firestore_outbox.example.repository import OrderRepository
    from firestore_outbox.example.services import create_new_order
    from firestore_outbox.example.uow import OrderUnitOfWork

__all__ = [
    "ORDER_AGGREGATE",
    "ORDER_CREATED",
    "InvalidOrder",
    "NewOrder",
    "OrderCounter",
    "OrderRepository",
    "OrderStatus",
    "OrderUnitOfWork",
    "create_new_order",
    "make_api",
    "make_orders_app",
    "run_demo",
]

__getattr__ = lazy_exports(__name__)
