"""The public `Repository` contract an application's own aggregates build on: a collection by
name or by setting, a checked document id, the unit of work to queue on; no protected name."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from firestore_outbox import FirestoreUnitOfWork
from firestore_outbox.errors import InvalidInput
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.producer import Repository
from tests.unit.fakes import FakeDb

SETTINGS = Settings()


class InvoiceRepository(Repository):
    def add(self, invoice: Mapping[str, Any], uow: FirestoreUnitOfWork | None = None) -> str:
        ref = self.document(invoice["number"], what="invoice number")
        self.unit_of_work(uow).add_create(ref, invoice)
        return str(ref.id)


class BillingUnitOfWork(FirestoreUnitOfWork):
    def __init__(self, db: Any, settings: Settings | None = None, **options: Any) -> None:
        super().__init__(db, settings, **options)
        self.invoices = InvoiceRepository(db, "invoices", uow=self)


def test_the_base_takes_a_collection_by_name() -> None:
    db = FakeDb()
    repository = Repository(db, "invoices")  # before 0.7: AttributeError '_setting'
    assert repository.collection.id == "invoices"
    assert repository.bound_unit_of_work is None
    assert repository.get("nothing-here") is None


def test_a_repository_without_a_collection_or_setting_says_what_it_needs() -> None:
    with pytest.raises(TypeError, match=r'InvoiceRepository\(db, "invoices"\)'):
        InvoiceRepository(FakeDb())


def test_a_subclass_hangs_its_repository_on_the_unit_of_work_and_commits_with_the_outbox() -> None:
    db = FakeDb()
    with BillingUnitOfWork(db, SETTINGS, nudger=False) as uow:
        invoice_id = uow.invoices.add({"number": "INV-1", "amountCents": 100})
        uow.outbox.add(
            {
                "eventType": "InvoiceIssued",
                "aggregateType": "invoice",
                "aggregateId": invoice_id,
                "payload": {"amountCents": 100},
            }
        )
        assert uow.invoices.bound_unit_of_work is uow and uow.pending_writes == 2
    assert invoice_id == "INV-1"
    assert db.documents("invoices")["INV-1"]["amountCents"] == 100
    assert len(db.documents(SETTINGS.outbox_collection)) == 1
    assert db.commit_calls == 1
    assert InvoiceRepository(db, "invoices").get("INV-1") is not None


def test_an_unbound_repository_is_handed_the_unit_of_work_and_refuses_none() -> None:
    db = FakeDb()
    invoices = InvoiceRepository(db, "invoices")
    with FirestoreUnitOfWork(db, SETTINGS, nudger=False) as uow:
        invoices.add({"number": "INV-2"}, uow)
        with pytest.raises(TypeError, match="not bound to a unit of work"):
            invoices.add({"number": "INV-3"})
    assert set(db.documents("invoices")) == {"INV-2"}


def test_a_bound_repository_refuses_another_unit_of_work() -> None:
    db = FakeDb()
    other = FirestoreUnitOfWork(db, SETTINGS, nudger=False)
    uow = BillingUnitOfWork(db, SETTINGS, nudger=False)
    with uow, pytest.raises(InvalidInput, match="another unit of work"):
        uow.invoices.add({"number": "INV-4"}, other)
    assert db.documents("invoices") == {}


@pytest.mark.parametrize("number", ["", "a/b", "..", "__x__"])
def test_an_id_firestore_would_refuse_is_named_before_anything_is_queued(number: str) -> None:
    db = FakeDb()
    with BillingUnitOfWork(db, SETTINGS, nudger=False) as uow:
        with pytest.raises(InvalidInput, match="invoice number"):
            uow.invoices.add({"number": number})
        assert uow.pending_writes == 0


def test_a_collection_setting_defaults_the_collection_from_the_configuration(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Orders(Repository):
        collection_setting = "orders_collection"

    class Legacy(Repository):  # the protected name subclasses used before 0.7
        _setting = "orders_collection"

    from firestore_outbox.config.loader import Configuration

    monkeypatch.setattr(Configuration, "default", lambda: Configuration.load({}))
    assert Orders(FakeDb()).collection.id == "orders"
    assert Legacy(FakeDb()).collection.id == "orders"
    assert Orders(FakeDb(), "elsewhere").collection.id == "elsewhere"
