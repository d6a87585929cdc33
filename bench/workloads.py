"""The benchmark's backlog: due PENDING events written by the app's own `uow.outbox.add`.

    python bench/workloads.py EMULATOR_HOST PROJECT COUNT

The harness runs this with the `PYTHONPATH` of the variant it measures next, so that each
relay drains events shaped as its own code writes them (a relay that heals older documents
would otherwise pay for healing in the benchmark).
"""

from __future__ import annotations

import sys
from typing import Any

import tree

SEED_BATCH = 500  # events per unit of work: the most writes one batch takes


def seed(settings: Any, count: int) -> None:
    """`count` due `OrderCreated` events, each of an aggregate of its own, written by the
    tree's own unit of work (`settings` is that tree's `Settings`)."""
    ours = tree.load()
    db = ours.get_db_client(settings)
    FirestoreUnitOfWork = ours.FirestoreUnitOfWork
    for start in range(0, count, SEED_BATCH):
        with FirestoreUnitOfWork(db, settings) as uow:
            for n in range(start, min(count, start + SEED_BATCH)):
                order_id = f"order-{n}"
                payload = {
                    "orderId": order_id,
                    "customerId": f"customer-{n}",
                    "items": [{"productId": "sku-1", "quantity": 1 + n % 5}],
                }
                uow.outbox.add(
                    {
                        "eventType": "OrderCreated",
                        "aggregateType": "order",
                        "aggregateId": order_id,
                        "payload": payload,
                    }
                )
    db.close()


def main() -> None:
    host, project, count = sys.argv[1:4]
    seed(tree.load().Settings(project_id=project, emulator_host=host), int(count))


if __name__ == "__main__":
    main()
