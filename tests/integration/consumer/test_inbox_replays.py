"""The inbox and re-driven deliveries, end to end on the emulator: the relay delivers, a
re-drive job sends the same events again (marked `outboxreplay`), a consumer reads each real
request and applies it through the inbox: skipped by default, once more per job with
`replays="again"`."""

from __future__ import annotations

from typing import Any

import pytest

from firestore_outbox.consumer import Inbox, Verdict, to_cloudevent, verify_request
from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.errors import InvalidInput
from firestore_outbox.redrive.selection import Selection
from firestore_outbox.redrive.targets import target_for
from tests.support.helpers import add_orders, make_relay, outbox, run_until
from tests.support.redrive import redrive

SECRET = "replay-test-secret-0123456789"


def consume(inbox: Inbox, requests: list[Any], applied: list[str]) -> list[Verdict]:
    effect = inbox.idempotent(lambda event: applied.append(event.get_id()))
    verdicts = []
    for request in requests:
        event = to_cloudevent(verify_request(request.headers, request.body, [SECRET]))
        verdicts.append(effect(event).verdict)
    return verdicts


@pytest.mark.parametrize(("replays", "applied_again"), [("skip", False), ("again", True)])
def test_a_replay_is_skipped_or_applied_once_more_per_job(
    db: Any, settings: Any, receiver: Receiver, replays: str, applied_again: bool
) -> None:
    events = add_orders(db, settings, 3)
    run_until(
        make_relay(db, settings, receiver.url, signing_secrets=(SECRET,)),
        lambda: all(e["status"] == "PROCESSED" for e in outbox(db, settings).values()),
    )
    inbox = Inbox(db, "billing", replays=replays)
    applied: list[str] = []
    assert consume(inbox, receiver.received, applied) == [Verdict.APPLIED] * 3
    service, _ = redrive(db, settings, receiver.url, signing_secrets=(SECRET,))
    job = service.start(Selection(), target=target_for(None), rate=1000.0, created_by="t")
    assert service.run(job.job_id).sent == 3
    replayed = receiver.received[3:]
    again = Verdict.APPLIED if applied_again else Verdict.DUPLICATE
    assert consume(inbox, replayed, applied) == [again] * 3
    # the same replay delivered twice (at least once) applies once at most
    assert consume(inbox, replayed, applied) == [Verdict.DUPLICATE] * 3
    assert sorted(applied) == sorted(events * (2 if applied_again else 1))


def test_a_new_consumer_applies_replays_whatever_the_option(
    db: Any, settings: Any, receiver: Receiver
) -> None:
    add_orders(db, settings, 2)
    run_until(
        make_relay(db, settings, receiver.url, signing_secrets=(SECRET,)),
        lambda: all(e["status"] == "PROCESSED" for e in outbox(db, settings).values()),
    )
    service, _ = redrive(db, settings, receiver.url, signing_secrets=(SECRET,))
    service.run(
        service.start(Selection(), target=target_for(None), rate=1e3, created_by="t").job_id
    )
    applied: list[str] = []
    assert consume(Inbox(db, "newcomer"), receiver.received[2:], applied) == [Verdict.APPLIED] * 2


def test_an_unknown_replays_option_is_refused(db: Any) -> None:
    with pytest.raises(InvalidInput, match="replays must be one of skip, again"):
        Inbox(db, "billing", replays="twice")
