"""What a raw read or write of the library returns: the documents a query found, a batch's
per-write answers, and what the relay needs of a document it may lease.

Plain values, built by `firestore_outbox.firestore.raw` (the one module that reaches into the
client's internals) and read everywhere else.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from google.cloud.firestore import DocumentReference

__all__ = ["BatchWritten", "DueDocument", "Found", "QueryResult"]


class DueDocument(Protocol):
    """What the relay needs of a document it may lease: a `Found` or a `DocumentSnapshot`."""

    @property
    def id(self) -> str: ...

    @property
    def reference(self) -> DocumentReference: ...

    @property
    def update_time(self) -> datetime.datetime: ...

    def to_dict(self) -> dict[str, Any] | None: ...

    def get(self, field_path: str) -> Any: ...


@dataclass(frozen=True)
class Found:
    """One query result. `to_dict()` returns the decoded data itself, not a copy."""

    reference: DocumentReference
    update_time: datetime.datetime
    data: dict[str, Any]

    @property
    def id(self) -> str:
        return str(self.reference.id)

    def to_dict(self) -> dict[str, Any]:
        return self.data

    def get(self, field_path: str) -> Any:
        return self.data.get(field_path)


@dataclass(frozen=True)
class QueryResult:
    """The documents a query returned, in order, and its read time on Firestore's clock."""

    found: list[Found]
    read_time: datetime.datetime | None


@dataclass(frozen=True)
class BatchWritten:
    """Per write its status code, status message and new update time; and how many times
    the request went out (more than once when the retry layer sent it again after an error,
    which may have come after the first one landed)."""

    answers: list[tuple[int, str, datetime.datetime | None]]
    sends: int
