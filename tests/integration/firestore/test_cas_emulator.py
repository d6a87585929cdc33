"""The compare-and-set primitive (`firestore_outbox.firestore.cas`) on the emulator: one outcome
value per write."""

from __future__ import annotations

from google.api_core.retry import Retry
from google.cloud import firestore

from firestore_outbox.firestore import cas
from firestore_outbox.firestore.cas import Change, WriteOutcome


def test_one_batch_reports_applied_lost_and_refused_writes_each_as_a_value(
    db: firestore.Client, unique: str
) -> None:
    things = db.collection(f"things-{unique}")
    for name in ("fresh", "stale", "big"):
        things.document(name).set({"n": 0, "text": "x" * (1_048_000 if name == "big" else 1)})
    fresh, stale, big = (things.document(n).get() for n in ("fresh", "stale", "big"))
    things.document("stale").update({"n": 1})  # changed since it was read

    written = cas.write_if_unchanged(
        db,
        [
            Change(fresh.reference, fresh.update_time, {"n": 2}),
            Change(stale.reference, stale.update_time, {"n": 2}),
            Change(big.reference, big.update_time, {"more": "y" * 10_000}),  # over 1 MiB
        ],
        retry=Retry(timeout=5),
        timeout=5,
    )

    assert [w.outcome for w in written] == [
        WriteOutcome.APPLIED,
        WriteOutcome.LOST,
        WriteOutcome.REFUSED,
    ]
    assert written[0].update_time == things.document("fresh").get().update_time
    assert written[2].reason.startswith("INVALID_ARGUMENT: ") and not written[2].transient
    assert things.document("fresh").get().get("n") == 2  # applied despite the refusal beside it
    assert things.document("stale").get().get("n") == 1
