"""Partition leases renewed while their holder is busy delivering, on the emulator with a real
HTTP downstream: a run whose budget outlasts its lease keeps delivering, in order."""

from __future__ import annotations

import random

from google.cloud import firestore

from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.settings import Settings
from tests.support.helpers import make_relay, outbox
from tests.support.ordering import Sequences, add_steps

# The lease the deliveries below outlast. A lease is renewed with 60% of it left and a publish
# refused with less than one attempt's time left (1.5 s: FAST's 0.5 s timeouts and the settle);
# FAST's 3 s lease left 0.3 s between the two, which a drain thread late to renew on a loaded
# machine can pass (heads handed back: `released` above 0, as in the four-relay e2e test).
# 6 s leaves 2.1 s, and the 6 s of delivery still pass the 4.5 s after which an unrenewed
# lease refuses every publish.
LEASE_SECONDS = 6.0


def test_a_lease_is_renewed_while_one_aggregate_is_delivered_past_it(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    # 40 events of one aggregate, each answered in 0.15 s: about 6 s of delivery, one at a
    # time, under a partition lease of 6 s (`LEASE_SECONDS`) and a budget of 30 s. Every page
    # is read and every partition visited early, so the drain only waits on publishes then.
    ids = add_steps(db, settings, ["hot"] * 40)
    downstream = Sequences(0.0, random.Random(3), slow_rate=1.0, slow_seconds=0.15)
    receiver.respond = downstream
    summary = make_relay(db, settings, receiver.url, lock_timeout_seconds=LEASE_SECONDS).run()

    events = outbox(db, settings)
    seen = {k: summary[k] for k in ("processed", "released", "unsettled", "stoppedBy")}
    assert seen == {"processed": 40, "released": 0, "unsettled": 0, "stoppedBy": "drained"}
    assert all(events[i]["status"] == "PROCESSED" for i in ids)
    assert downstream.accepted == {"hot": list(range(40))}
    assert (downstream.violations, downstream.duplicates) == (0, 0)


def test_events_waiting_for_a_publishing_thread_go_under_the_renewed_lease(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    # 40 aggregates of one event each, one publishing thread, each answer 0.15 s: the batch's
    # heads wait in the pool's queue for about 6 s, past the time an unrenewed lease
    # (`LEASE_SECONDS`) has room for a publish, which the drain renews meanwhile.
    ids = add_steps(db, settings, [f"a{n}" for n in range(40)])
    receiver.respond = Sequences(0.0, random.Random(4), slow_rate=1.0, slow_seconds=0.15)
    summary = make_relay(
        db, settings, receiver.url, concurrency=1, lock_timeout_seconds=LEASE_SECONDS
    ).run()

    seen = {k: summary[k] for k in ("processed", "released", "unsettled", "stoppedBy")}
    assert seen == {"processed": 40, "released": 0, "unsettled": 0, "stoppedBy": "drained"}
    assert {outbox(db, settings)[i]["status"] for i in ids} == {"PROCESSED"}
