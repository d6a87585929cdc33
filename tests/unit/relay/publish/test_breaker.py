"""The relay's circuit breaker, with hand-made results (no Firestore, no network)."""

from __future__ import annotations

import json
import logging

import pytest

from firestore_outbox.publishers.base import Outcome, PublishResult
from firestore_outbox.relay.publish.breaker import Breaker

CHANNEL = PublishResult(Outcome.CHANNEL, "HTTP 401 unauthorized")


def test_the_breaker_opens_after_the_threshold_in_a_row_and_any_other_result_resets_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    breaker = Breaker(3, "instance-1")
    for result in (CHANNEL, CHANNEL, PublishResult(Outcome.RETRY, "HTTP 503"), CHANNEL, None):
        breaker.record(result)  # None (never sent) says nothing about the channel
    assert not breaker.open  # the 503 broke the run of CHANNEL results

    with caplog.at_level(logging.ERROR, logger="firestore_outbox.relay"):
        for _ in range(4):
            breaker.record(CHANNEL)
    assert breaker.open and breaker.error_class == "HTTP 401"
    broken = [r for r in caplog.records if r.structured["event"] == "relay.channel_broken"]
    assert len(broken) == 1  # said once, however many more arrive


def test_a_threshold_of_one_opens_at_the_first_channel_failure() -> None:
    breaker = Breaker(1, "instance-1")
    breaker.record(PublishResult.delivered())
    assert not breaker.open
    breaker.record(PublishResult(Outcome.CHANNEL, "ConnectionError: refused"))
    assert breaker.error_class == "ConnectionError"
    assert json.dumps({"channel": breaker.error_class})  # fits the summary as it is


def test_after_its_cooldown_the_breaker_lets_the_channel_be_tried_again() -> None:
    breaker = Breaker(2, "follower", cooldown=0.0)  # a long-lived worker's, cooled at once
    breaker.record(CHANNEL)
    breaker.record(CHANNEL)
    assert not breaker.open and breaker.error_class == "HTTP 401"  # opened, cooled down
    breaker.record(PublishResult.delivered())  # the channel works again
    breaker.record(CHANNEL)
    assert breaker.error_class == "HTTP 401" and not breaker.open
