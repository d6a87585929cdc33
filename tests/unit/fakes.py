"""Hand-written fakes over fake-firestore's in-memory client, for the unit tier."""

from __future__ import annotations

from typing import Any

from fake_firestore import MockFirestore
from fake_firestore.transaction import FakeWriteBatch
from google.api_core.exceptions import AlreadyExists, GoogleAPICallError

from firestore_outbox.producer.commits import COMMIT_TOKEN_FIELD


class StrictBatch(FakeWriteBatch):
    """Rejects the whole batch when a create hits an existing document, as Firestore does."""

    def __init__(self, client: FakeDb) -> None:
        super().__init__(client)
        self._db = client
        self._creates: list[Any] = []

    def create(self, reference: Any, document_data: dict[str, Any]) -> StrictBatch:
        self._creates.append(reference)
        super().create(reference, document_data)
        return self

    def commit(self, retry: Any = None, timeout: float | None = None) -> list[Any]:
        self._db.commit_calls += 1
        self._db.timeouts.append(timeout)
        if self._db.fail_next_commit is not None:
            error, self._db.fail_next_commit = self._db.fail_next_commit, None
            raise error
        for reference in self._creates:
            if reference.get().exists:
                raise AlreadyExists(f"entity already exists: {reference.path}")
        return super().commit(timeout)


class FakeDb(MockFirestore):  # type: ignore[misc]
    """In-memory Firestore that counts commits and reads, and can fail the next commit."""

    def __init__(self) -> None:
        super().__init__()
        self.commit_calls = 0
        self.get_all_calls = 0
        self.fail_next_commit: GoogleAPICallError | None = None
        self.timeouts: list[float | None] = []  # of each commit and read-back, in order

    def get_all(self, references: Any, *args: Any, **kwargs: Any) -> Any:
        self.get_all_calls += 1
        kwargs.pop("retry", None)  # the fake neither retries nor times out
        self.timeouts.append(kwargs.pop("timeout", None))
        return super().get_all(references, *args, **kwargs)

    def batch(self) -> StrictBatch:
        return StrictBatch(self)

    def documents(self, collection: str) -> dict[str, dict[str, Any]]:
        """The documents' fields, less the unit of work's commit token (see
        firestore_outbox/producer/commits.py)."""
        return {
            doc.id: {k: v for k, v in doc.to_dict().items() if k != COMMIT_TOKEN_FIELD}
            for doc in self.collection(collection).stream()
        }
