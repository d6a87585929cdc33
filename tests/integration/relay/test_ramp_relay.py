"""The ramp governor wired into the relay (`RELAY_RAMP=on`), on the emulator with a real HTTP
downstream: a drain on a tiny schedule is paced. Settles are counted per window of time on
Firestore's own clock (each settle's commit time, `updatedAt`): however fast the downstream
answers, no window of W seconds may carry more settles than the governor's bucket plus
W seconds of its rate (reads share that rate, so the settles alone are a lower count)."""

from __future__ import annotations

import datetime as dt

from google.cloud import firestore

from firestore_outbox.config.shortcuts import load_relay_config
from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.relay.ramp import RampSettings
from tests.support.helpers import add_orders, make_relay, outbox, run_until

RATE = 20  # operations per second: the tiny schedule (Firestore's rule starts at 500)
EVENTS = 60  # with their reads, about 6 s of this rate


def most_in_any_window(times: list[dt.datetime], seconds: float) -> int:
    """The largest number of `times` within any window of `seconds` that starts at one."""
    width = dt.timedelta(seconds=seconds)
    return max(sum(1 for t in times[i:] if t - start <= width) for i, start in enumerate(times))


def test_a_ramped_drain_keeps_its_settles_within_the_schedule(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    add_orders(db, settings, EVENTS)
    relay = make_relay(
        db, settings, receiver.url, ramp=True, ramp_rate=RATE, ramp_step_seconds=3600.0
    )
    run_until(
        relay,
        lambda: all(e["status"] == "PROCESSED" for e in outbox(db, settings).values()),
        timeout=60,
    )

    settled = sorted(e["updatedAt"] for e in outbox(db, settings).values())
    assert len(settled) == EVENTS == len({r.event_id for r in receiver.received})
    for seconds in (0.5, 1.0, 2.0):
        # The bucket holds one second of the rate; it starts empty.
        assert most_in_any_window(settled, seconds) <= RATE + RATE * seconds, seconds


def test_the_ramp_is_off_unless_asked_for_and_its_settings_are_checked() -> None:
    base = {"DOWNSTREAM_SERVICE_URL": "http://127.0.0.1:9/"}
    assert load_relay_config(base).ramp == RampSettings(enabled=False)
    on = load_relay_config({**base, "RELAY_RAMP": "On", "RELAY_RAMP_RATE": "40"})
    assert on.ramp == RampSettings(enabled=True, rate=40, step_seconds=300.0)
    for variable, value in (
        ("RELAY_RAMP", "fast"),
        ("RELAY_RAMP_RATE", "0"),
        ("RELAY_RAMP_STEP_SECONDS", "-1"),
    ):
        try:
            load_relay_config({**base, variable: value})
        except ValueError as exc:
            assert variable in str(exc)
        else:
            raise AssertionError(f"{variable}={value} accepted")
