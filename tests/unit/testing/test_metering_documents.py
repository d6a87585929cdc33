"""`firestore_outbox.testing.metering` counts documents on the raw protobuf of each streamed
answer."""

from __future__ import annotations

from google.cloud.firestore_v1.types import document, firestore, write

from firestore_outbox.testing.metering import _documents_in

NAME = "projects/p/databases/(default)/documents/outbox/e1"


def test_a_query_answer_counts_its_document_and_only_it() -> None:
    found = firestore.RunQueryResponse(document=document.Document(name=NAME))
    progress = firestore.RunQueryResponse(skipped_results=0)
    assert _documents_in("RunQuery", found) == 1
    assert _documents_in("RunQuery", progress) == 0


def test_a_get_counts_found_and_missing_documents() -> None:
    found = firestore.BatchGetDocumentsResponse(found=document.Document(name=NAME))
    missing = firestore.BatchGetDocumentsResponse(missing=NAME)
    assert _documents_in("BatchGetDocuments", found) == 1
    assert _documents_in("BatchGetDocuments", missing) == 1  # billed as a read too


def test_a_listener_counts_changes_into_its_targets_only() -> None:
    change = firestore.ListenResponse(
        document_change=write.DocumentChange(document=document.Document(name=NAME), target_ids=[1])
    )
    removal = firestore.ListenResponse(
        document_change=write.DocumentChange(
            document=document.Document(name=NAME), removed_target_ids=[1]
        )
    )
    assert _documents_in("Listen", change) == 1
    assert _documents_in("Listen", removal) == 0
    # A raw protobuf (no proto-plus wrapper) is read the same way.
    assert _documents_in("Listen", firestore.ListenResponse.pb(change)) == 1
