"""The reference design's relay loop (design note 004, `relay_handler.handler`), step for
step, as the benchmark's baseline: one event at a time, lease, POST, settle.

Imports nothing from `app`, so it runs unchanged whichever tree a benchmark variant uses.
"""

from __future__ import annotations

import datetime
import uuid
from typing import TYPE_CHECKING, Any

import requests
from google.cloud.firestore import FieldFilter

if TYPE_CHECKING:
    from google.cloud.firestore import Client


def reference_invocation(db: Client, collection: str, url: str) -> dict[str, Any]:
    """One timer invocation of the reference design's relay (004, `relay_handler.handler`),
    step for step: query 20 PENDING events, then for each one an update to PROCESSING, a
    POST (a fresh `requests.post`, so a new connection each time), an update to PROCESSED.

    Two changes let it run here at all: the lock bound is `now` instead of `now - 5 min`
    (with 5 minutes a fresh event is not due for 5 minutes), and it posts the payload instead
    of the whole document (whose timestamps `json=` cannot encode).
    """
    now = datetime.datetime.now(datetime.timezone.utc)
    query = (
        db.collection(collection)
        .where(filter=FieldFilter("status", "==", "PENDING"))
        .where(filter=FieldFilter("updatedAt", "<", now))
        .limit(20)
    )
    events = list(query.stream())
    if not events:
        return {"status": "No new events"}
    processed = failed = 0
    instance = uuid.uuid4().hex
    for snapshot in events:
        ref, data = snapshot.reference, snapshot.to_dict() or {}
        try:
            ref.update({"status": "PROCESSING", "updatedAt": now, "processingInstanceId": instance})
            try:
                response = requests.post(url, json=data.get("payload"), timeout=10)
                response.raise_for_status()
                success = True
            except requests.RequestException:
                success = False
            if success:
                ref.update({"status": "PROCESSED", "processedAt": now})
                processed += 1
            else:
                attempts = data.get("attempts", 0) + 1
                ref.update(
                    {"status": "FAILED" if attempts >= 5 else "PENDING", "attempts": attempts}
                )
                failed += 1
        except Exception:
            ref.update({"status": "PENDING"})
            failed += 1
    return {"status": "Completed", "processed": processed, "failed": failed}


def run_reference(db: Client, collection: str, url: str) -> int:
    """Invoke the reference relay again and again until it finds nothing; events processed."""
    processed = 0
    while True:
        result = reference_invocation(db, collection, url)
        if result["status"] != "Completed":
            return processed
        processed += result["processed"]
