"""The process's nudgers (`firestore_outbox.nudge.shared_nudger`, `hand_off_for`): an open one
is handed out again, one that was closed never is.

A nudger is kept per configuration for the life of the process, and anyone holding it may
close it (a short-lived producer at its end, a test). The caches handed the closed one out
again: its thread had ended, so every later commit's nudge was queued, never sent, and
`wait_idle` never came back. Now a closed nudger is built again when next asked for, and a
nudge given to a closed one is counted `dropped`. The target is a real local HTTP server."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, cast

import pytest

from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.nudge import NudgeMode, Nudger, NudgeSettings, hand_off_for, shared_nudger

if TYPE_CHECKING:
    from google.cloud.firestore import Client

SECRET = "unit-nudge-secret-0123456789"
NO_DB = cast("Client", None)  # an `http` target never reads Firestore
SETTINGS = Settings(project_id="shared-nudger")

Cached = Callable[[NudgeSettings], "Nudger | None"]
CACHES: dict[str, Cached] = {
    "shared_nudger": lambda nudge: shared_nudger(nudge, NO_DB, SETTINGS),
    "hand_off_for": lambda nudge: hand_off_for(NO_DB, SETTINGS, nudge),
}


@pytest.fixture
def target() -> Iterator[Receiver]:
    with Receiver() as receiver:
        yield receiver


def open_one(cached: Cached, nudge: NudgeSettings) -> Nudger:
    nudger = cached(nudge)
    assert nudger is not None
    return nudger


@pytest.mark.parametrize("cache", sorted(CACHES))
def test_a_closed_cached_nudger_is_built_again_and_an_open_one_reused(
    cache: str, target: Receiver
) -> None:
    cached = CACHES[cache]
    nudge = NudgeSettings(mode=NudgeMode.HTTP, url=target.url, secrets=(SECRET,))
    first = open_one(cached, nudge)
    assert cached(nudge) is first  # open: the same one, its connections kept

    first.close()
    again = open_one(cached, nudge)
    assert again is not first, "the closed nudger was handed out again"
    assert cached(nudge) is again
    again.nudge({3})
    assert again.wait_idle(10)
    assert again.counts["sent"] == 1, again.counts
    [received] = target.wait_for(1)
    assert received.json()["data"]["partitions"] == [3]
    assert (first.closed, again.closed) == (True, False)
    again.close()


def test_a_nudge_given_to_a_closed_nudger_is_dropped_not_left_waiting(target: Receiver) -> None:
    nudge = NudgeSettings(mode=NudgeMode.HTTP, url=target.url, secrets=(SECRET,))
    nudger = open_one(CACHES["shared_nudger"], nudge)
    nudger.close()
    nudger.nudge({1})
    assert nudger.wait_idle(0)  # nothing queued for a thread that has ended
    assert (nudger.counts["requested"], nudger.counts["dropped"]) == (1, 1), nudger.counts
    assert target.received == []
