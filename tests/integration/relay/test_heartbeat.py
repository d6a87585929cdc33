"""The relay's heartbeat on the emulator: one write a run at most every RELAY_HEARTBEAT_SECONDS
unless what it reports changed; a broken channel's "since" carried across runs and across
relays; a write that lost the race to another relay's is made again on what that one wrote."""

from __future__ import annotations

import random
import socket

from google.cloud import firestore

from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.relay.heartbeat import Heartbeat
from tests.support.helpers import add_orders, make_relay, outbox, run_until

HEALTH = "outbox_health"


def shards(db: firestore.Client) -> dict[str, dict]:
    return {s.id: s.to_dict() or {} for s in db.collection(HEALTH).get()}


def refused_url() -> str:
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{closed.getsockname()[1]}/events"


def test_runs_that_report_the_same_are_written_once_within_the_interval(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    relay = make_relay(db, settings, receiver.url, heartbeat_seconds=3600.0)
    relay.run()
    [(shard, first)] = shards(db).items()
    relay.run()
    assert shards(db)[shard]["at"] == first["at"]  # drained again: not written again
    add_orders(db, settings, 2)
    relay.run()  # the same stop reason: still not written
    assert shards(db)[shard]["at"] == first["at"]

    broken = make_relay(db, settings, refused_url(), heartbeat_seconds=3600.0, concurrency=1)
    broken.heartbeat = relay.heartbeat  # the same relay instance, now with a broken channel
    add_orders(db, settings, 4)
    assert broken.run()["stoppedBy"] == "channel"
    changed = shards(db)[shard]
    assert changed["at"] > first["at"] and changed["stoppedBy"] == "channel"
    assert changed["channel"]["errorClass"] == "ConnectionError"


def test_a_broken_channels_since_is_carried_across_runs_and_relays(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    add_orders(db, settings, 8)
    url = refused_url()
    first = make_relay(db, settings, url, concurrency=1, heartbeat_seconds=0.0)
    first.heartbeat = Heartbeat(db, HEALTH, every_seconds=0, timeout=5, rng=random.Random(1))
    assert first.run()["stoppedBy"] == "channel"
    [(shard, seen)] = shards(db).items()
    since = seen["channel"]["since"]

    second = make_relay(db, settings, url, concurrency=1, heartbeat_seconds=0.0)
    second.heartbeat = Heartbeat(db, HEALTH, every_seconds=0, timeout=5, rng=random.Random(1))
    assert second.run()["stoppedBy"] == "channel"  # another relay, the same shard
    again = shards(db)[shard]
    assert again["at"] > seen["at"] and again["channel"]["since"] == since

    healed = make_relay(db, settings, receiver.url, heartbeat_seconds=0.0)
    healed.heartbeat = Heartbeat(db, HEALTH, every_seconds=0, timeout=5, rng=random.Random(1))
    run_until(healed, lambda: {e["status"] for e in outbox(db, settings).values()} == {"PROCESSED"})
    assert shards(db)[shard]["channel"] is None  # a run that delivered: whole again


def test_a_beat_that_lost_the_race_is_written_again_on_the_winners(
    db: firestore.Client,
) -> None:
    mine = Heartbeat(db, HEALTH, every_seconds=0, timeout=5, rng=random.Random(2))
    theirs = Heartbeat(db, HEALTH, every_seconds=0, timeout=5, rng=random.Random(2))
    assert mine.beat({"status": "ok", "stoppedBy": "drained", "instanceId": "mine-1"})
    assert theirs.beat({"status": "ok", "stoppedBy": "drained", "instanceId": "theirs-1"})
    # Mine still holds the update time of its own write: its precondition fails, it reads
    # the shard and writes once more.
    assert mine.beat({"status": "ok", "stoppedBy": "budget", "instanceId": "mine-2"})
    [record] = shards(db).values()
    assert (record["instanceId"], record["stoppedBy"]) == ("mine-2", "budget")


def test_a_run_whose_budget_fits_no_attempt_still_beats(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    summary = make_relay(db, settings, receiver.url).run(time_budget=0.1)
    assert summary["stoppedBy"] == "budgetTooShort", summary
    [record] = shards(db).values()  # the watchdog hears of it: relay_error, with its error
    assert (record["status"], record["stoppedBy"]) == ("error", "budgetTooShort")
    assert record["error"] == summary["error"]
