"""The Kafka publisher's settings and error mapping: each bad variable is named, the password
is never echoed and is masked as a secret, and librdkafka's errors land on the relay's
outcomes (an unknown topic, which the test broker cannot show, included)."""

from __future__ import annotations

from pathlib import Path

import pytest

from firestore_outbox.config.loader import Configuration
from firestore_outbox.errors import ConfigError
from firestore_outbox.publishers.base import Outcome
from firestore_outbox.publishers.kafka.settings import KafkaSettings
from tests.support.tls_certificates import self_signed_localhost

PASSWORD = "s3cret-kafka-pa55"
KAFKA = {
    "DOWNSTREAM_SERVICE_URL": "http://127.0.0.1:9/unused",
    "RELAY_PUBLISHER": "kafka",
    "RELAY_KAFKA_BOOTSTRAP_SERVERS": "b-1.example.com:9093,b-2.example.com:9093",
    "RELAY_KAFKA_TOPIC": "order-events",
    "RELAY_KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
    "RELAY_KAFKA_SASL_MECHANISM": "PLAIN",
    "RELAY_KAFKA_USERNAME": "relay",
    "RELAY_KAFKA_PASSWORD": PASSWORD,
}


def settings_from(environ: dict[str, str]) -> KafkaSettings:
    publisher = Configuration.load(environ).relay().publisher
    assert isinstance(publisher, KafkaSettings)
    return publisher


def test_the_settings_read_from_the_environment() -> None:
    settings = settings_from(KAFKA)
    assert settings.bootstrap_servers == KAFKA["RELAY_KAFKA_BOOTSTRAP_SERVERS"]
    assert (settings.topic, settings.sasl_mechanism, settings.username) == (
        "order-events",
        "PLAIN",
        "relay",
    )
    assert settings.hostname_check == "https"
    assert PASSWORD not in repr(settings)


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("RELAY_KAFKA_BOOTSTRAP_SERVERS", ""),
        ("RELAY_KAFKA_BOOTSTRAP_SERVERS", "broker-without-port"),
        ("RELAY_KAFKA_BOOTSTRAP_SERVERS", "b-1.example.com:85536"),  # librdkafka: port 20000
        ("RELAY_KAFKA_BOOTSTRAP_SERVERS", "b-1.example.com:0"),
        ("RELAY_KAFKA_BOOTSTRAP_SERVERS", "b-1.example.com:9093,b-2.example.com:65536"),
        ("RELAY_KAFKA_BOOTSTRAP_SERVERS", "b:\uff19\uff10\uff19\uff13"),  # full-width digits
        ("RELAY_KAFKA_TOPIC", ""),
        ("RELAY_KAFKA_TOPIC", "orders and more"),
        ("RELAY_KAFKA_SECURITY_PROTOCOL", "SSL_PLEASE"),
        ("RELAY_KAFKA_SASL_MECHANISM", "GSSAPI"),
        ("RELAY_KAFKA_SASL_MECHANISM", ""),
        ("RELAY_KAFKA_USERNAME", ""),
        ("RELAY_KAFKA_PASSWORD", ""),
        ("RELAY_KAFKA_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM", "maybe"),
        ("RELAY_KAFKA_CA_FILE", "/nonexistent/ca.pem"),
        ("RELAY_KAFKA_CA_FILE", "/dev/null"),  # readable, no certificate in it
        ("RELAY_KAFKA_CA_FILE", "/"),
    ],
)
def test_a_bad_or_missing_variable_is_named_and_the_password_never_echoed(
    variable: str, value: str
) -> None:
    with pytest.raises(ConfigError, match=variable) as raised:
        settings_from({**KAFKA, variable: value})
    assert PASSWORD not in str(raised.value)


def test_credentials_without_sasl_are_refused() -> None:
    plain = {**KAFKA, "RELAY_KAFKA_SECURITY_PROTOCOL": "PLAINTEXT"}
    with pytest.raises(ConfigError, match="RELAY_KAFKA_SECURITY_PROTOCOL=SASL_SSL"):
        settings_from(plain)
    bare = {k: v for k, v in plain.items() if "SASL" not in k and "USER" not in k}
    bare = {k: v for k, v in bare.items() if "PASSWORD" not in k}
    assert settings_from(bare).security_protocol == "PLAINTEXT"


@pytest.mark.parametrize(
    "servers", ["b-1.example.com:9093", "10.0.0.1:9092, 10.0.0.2:9092", "[::1]:9092", "b:65535"]
)
def test_brokers_with_ports_in_range_are_accepted(servers: str) -> None:
    assert settings_from({**KAFKA, "RELAY_KAFKA_BOOTSTRAP_SERVERS": servers}).topic


def test_the_ca_file_and_the_host_name_check_reach_librdkafka(tmp_path: Path) -> None:
    pytest.importorskip("confluent_kafka")
    from firestore_outbox.publishers.kafka.producer import client_config

    ca, _ = self_signed_localhost(tmp_path)
    settings = settings_from(
        {
            **KAFKA,
            "RELAY_KAFKA_CA_FILE": str(ca),
            "RELAY_KAFKA_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM": "none",
        }
    )
    config = client_config(settings, connect_timeout=5, bound=15)
    assert config["ssl.ca.location"] == str(ca)
    assert config["ssl.endpoint.identification.algorithm"] == "none"
    assert config["sasl.password"] == PASSWORD
    assert config["message.timeout.ms"] == 15000


def test_the_password_is_a_secret_masked_in_logs_and_previews() -> None:
    configuration = Configuration.load(KAFKA)
    assert PASSWORD in configuration.secrets()
    assert "RELAY_KAFKA_PASSWORD" in Configuration.SECRET_VARIABLES
    assert PASSWORD not in configuration.mask(f"login refused for relay:{PASSWORD}")


@pytest.mark.parametrize(
    ("name", "outcome"),
    [
        ("MSG_SIZE_TOO_LARGE", Outcome.REJECTED),
        ("INVALID_RECORD", Outcome.REJECTED),
        ("UNKNOWN_TOPIC_OR_PART", Outcome.CHANNEL),
        ("_UNKNOWN_TOPIC", Outcome.CHANNEL),
        ("TOPIC_AUTHORIZATION_FAILED", Outcome.CHANNEL),
        ("SASL_AUTHENTICATION_FAILED", Outcome.CHANNEL),
        ("_AUTHENTICATION", Outcome.CHANNEL),
        ("_SSL", Outcome.CHANNEL),
        ("_MSG_TIMED_OUT", Outcome.RETRY),
        ("_TRANSPORT", Outcome.RETRY),
        ("NOT_ENOUGH_REPLICAS", Outcome.RETRY),
        ("NOT_LEADER_FOR_PARTITION", Outcome.RETRY),
    ],
)
def test_librdkafka_errors_map_onto_the_outcomes(name: str, outcome: Outcome) -> None:
    kafka = pytest.importorskip("confluent_kafka")
    from firestore_outbox.publishers.kafka.outcomes import outcome_of

    assert outcome_of(getattr(kafka.KafkaError, name)) is outcome
