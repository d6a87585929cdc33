"""`FirestoreUnitOfWork`: the library's unit of work with `uow.orders` beside `uow.outbox`
(`firestore_outbox.example.OrderUnitOfWork`, under the design card's name)."""

from firestore_outbox.example import OrderUnitOfWork as FirestoreUnitOfWork

__all__ = ["FirestoreUnitOfWork"]
