"""Every publisher's settings are checked whole before the first event is read: a port out of
1-65535 (or 0), a CA file that holds no PEM certificate, SASL settings that do not go together,
a Kafka producer librdkafka refuses. The Function Compute handler answers `status: error`
naming the variable, `outbox relay` exits 2 with it, and no event's `attempts` moves (read
back from the emulator). A publisher that raises `ConfigError` while it publishes is the
channel's fault: every event handed back unspent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from google.cloud import firestore

from firestore_outbox.config.loader import Configuration
from firestore_outbox.errors import ConfigError
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.function_compute.relay import RelayFunction
from firestore_outbox.publishers.base import Delivery, PublishResult
from firestore_outbox.publishers.kafka.settings import KafkaSettings
from firestore_outbox.relay import Relay
from tests.support.helpers import FAST, add_orders, configured, outbox, relay_environment
from tests.support.kafka import KafkaBroker
from tests.support.operator_commands import Run, run_outbox  # noqa: F401
from tests.support.tls_certificates import self_signed_localhost

pytestmark = pytest.mark.emulator

ACCESS_KEY = {"ALIBABA_CLOUD_ACCESS_KEY_ID": "AKID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET": "s3cret-k"}
KAFKA = {"RELAY_PUBLISHER": "kafka", "RELAY_KAFKA_TOPIC": "orders"}
SASL = {
    **KAFKA,
    "RELAY_KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9092",
    "RELAY_KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
    "RELAY_KAFKA_SASL_MECHANISM": "PLAIN",
    "RELAY_KAFKA_USERNAME": "relay",
    "RELAY_KAFKA_PASSWORD": "kafka-s3cret",
}
AMQP = {"RELAY_PUBLISHER": "amqp", "RELAY_AMQP_EXCHANGE": "x", "RELAY_AMQP_ROUTING_KEY": "k"}


def cases(kafka_port: int, not_pem: Path) -> dict[str, tuple[dict[str, str], str]]:
    """Each bad configuration: its variables, and the variable the refusal must name."""
    wrapped = kafka_port + 65536  # librdkafka reads it modulo 65536: the broker's own port
    servers = "RELAY_KAFKA_BOOTSTRAP_SERVERS"
    return {
        "kafka port past 65535": ({**KAFKA, servers: f"127.0.0.1:{wrapped}"}, servers),
        "kafka port 0": ({**KAFKA, servers: "127.0.0.1:0"}, servers),
        "kafka second broker's port 0": ({**KAFKA, servers: "a:9092, b:0"}, servers),
        "kafka CA file not PEM": (
            {**SASL, "RELAY_KAFKA_CA_FILE": str(not_pem)},
            "RELAY_KAFKA_CA_FILE",
        ),
        "kafka CA file without TLS": (
            {**KAFKA, servers: "127.0.0.1:9092", "RELAY_KAFKA_CA_FILE": str(not_pem)},
            "RELAY_KAFKA_CA_FILE",
        ),
        "kafka SASL credentials without SASL": (
            {**SASL, "RELAY_KAFKA_SECURITY_PROTOCOL": "PLAINTEXT"},
            "RELAY_KAFKA_SASL_MECHANISM",
        ),
        "kafka SASL without a password": (
            {**SASL, "RELAY_KAFKA_PASSWORD": ""},
            "RELAY_KAFKA_PASSWORD",
        ),
        "amqp port past 65535": (
            {**AMQP, "RELAY_AMQP_URL": "amqp://guest:guest@127.0.0.1:65536/"},
            "RELAY_AMQP_URL",
        ),
        "amqp port 0": ({**AMQP, "RELAY_AMQP_URL": "amqp://127.0.0.1:0/"}, "RELAY_AMQP_URL"),
        "rocketmq port 0": (
            {
                "RELAY_PUBLISHER": "rocketmq",
                "RELAY_ROCKETMQ_ENDPOINTS": "127.0.0.1:8081;127.0.0.1:0",
                "RELAY_ROCKETMQ_TOPIC": "orders",
            },
            "RELAY_ROCKETMQ_ENDPOINTS",
        ),
        "http port past 65535": (
            {"DOWNSTREAM_SERVICE_URL": "http://127.0.0.1:85536/events"},
            "DOWNSTREAM_SERVICE_URL",
        ),
        "mns port 0": (
            {
                "RELAY_PUBLISHER": "mns",
                "RELAY_MNS_ENDPOINT": "http://127.0.0.1:0",
                "RELAY_MNS_QUEUE": "q",
                **ACCESS_KEY,
            },
            "RELAY_MNS_ENDPOINT",
        ),
        "eventbridge port past 65535": (
            {
                "RELAY_PUBLISHER": "eventbridge",
                "RELAY_EVENTBRIDGE_ENDPOINT": "http://127.0.0.1:70000",
                "RELAY_EVENTBRIDGE_BUS": "b",
                **ACCESS_KEY,
            },
            "RELAY_EVENTBRIDGE_ENDPOINT",
        ),
        "fc3 port 0": (
            {
                "RELAY_PUBLISHER": "fc3",
                "RELAY_FC_ENDPOINT": "http://127.0.0.1:0",
                "RELAY_FC_FUNCTION": "f",
                **ACCESS_KEY,
            },
            "RELAY_FC_ENDPOINT",
        ),
    }


CASES = list(cases(0, Path()))


def untouched(db: firestore.Client, settings: Settings) -> dict[str, tuple[Any, ...]]:
    fields = ("status", "attempts", "lastError", "processingInstanceId")
    return {i: tuple(e.get(f) for f in fields) for i, e in outbox(db, settings).items()}


@pytest.mark.parametrize("case", CASES)
def test_a_bad_setting_refuses_the_run_naming_the_variable_and_spends_no_attempt(
    case: str,
    kafka: KafkaBroker,
    db: firestore.Client,
    settings: Settings,
    tmp_path: Path,
    run: Run,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    not_pem = tmp_path / "ca.pem"
    not_pem.write_text("not a certificate\n")
    variables, variable = cases(kafka.port, not_pem)[case]
    add_orders(db, settings, 3)
    before = untouched(db, settings)
    environment = {**relay_environment(settings, "http://127.0.0.1:9/unused"), **variables}

    summary = RelayFunction(lambda: Configuration.load(environment)).handler(b"{}", None)
    assert summary["status"] == "error" and summary["processed"] == 0, summary
    assert variable in summary["error"]
    for name, value in variables.items():
        if name.endswith(("PASSWORD", "SECRET", "_URL")) and value:
            assert value not in summary["error"]

    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    code, out, err = run("relay", "--time-budget", "5")
    assert code == 2 and out == "" and err.startswith("error: ") and variable in err, err

    # No lease, no attempt, no error written; nothing delivered (the broker listening on
    # the port librdkafka would have wrapped to, among others).
    assert untouched(db, settings) == before


def test_a_kafka_producer_librdkafka_refuses_is_a_configuration_error_before_any_read(
    db: firestore.Client, settings: Settings, tmp_path: Path
) -> None:
    # A CA file that held a certificate when the settings were read, and no longer does when
    # the producer is made (a mounted secret rotated in between): librdkafka refuses it.
    ca_file, _ = self_signed_localhost(tmp_path)
    publisher = KafkaSettings(
        bootstrap_servers="127.0.0.1:9092",
        topic="orders",
        security_protocol="SASL_SSL",
        sasl_mechanism="PLAIN",
        username="relay",
        password="kafka-s3cret",
        ca_file=str(ca_file),
    )
    ca_file.write_text("not a certificate any more\n")
    add_orders(db, settings, 2)
    before = untouched(db, settings)
    with pytest.raises(ConfigError, match=r"^RELAY_KAFKA_CA_FILE: .*ssl\.ca\.location") as raised:
        Relay(db, settings, configured(FAST, publisher=publisher))
    assert "kafka-s3cret" not in str(raised.value)
    assert untouched(db, settings) == before


class RefusesItsSettings:
    """A publisher whose client, made again while it publishes, refuses its settings."""

    def __init__(self) -> None:
        self.tried = 0

    def publish(self, delivery: Delivery) -> PublishResult:
        self.tried += 1
        raise ConfigError("RELAY_KAFKA_CA_FILE: librdkafka cannot make the Kafka producer")


@pytest.mark.parametrize("leases", ["partition", "event"])
def test_a_publisher_raising_config_error_hands_every_event_back_unspent(
    db: firestore.Client, settings: Settings, leases: str
) -> None:
    ids = add_orders(db, settings, 6)
    publisher = RefusesItsSettings()
    config = configured(FAST, time_budget_seconds=5.0, leases=leases, concurrency=1)
    summary = Relay(db, settings, config, publisher=publisher).run()

    assert summary["stoppedBy"] == "channel" and summary["processed"] == 0, summary
    assert publisher.tried == FAST.breaker_threshold
    events = outbox(db, settings)
    assert {(events[i]["status"], events[i].get("attempts", 0)) for i in ids} == {("PENDING", 0)}
