"""The `kafka` publisher's settings: the brokers, the topic, the security protocol and the SASL
credentials (the password is a secret: never echoed), read from `RELAY_KAFKA_*` and checked."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import ClassVar

from firestore_outbox.errors import ConfigError
from firestore_outbox.numbers import Get
from firestore_outbox.publishers.settings import (
    PublisherSettings,
    pem_certificates,
    port_problem,
    required,
)

PROTOCOLS = ("PLAINTEXT", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
# librdkafka's `ssl.endpoint.identification.algorithm`: `https` checks the broker's host name
# against its certificate (the default since librdkafka 2.0), `none` checks the CA only.
HOSTNAME_CHECKS = ("https", "none")
# Kafka's own rule for topic names.
_TOPIC = re.compile(r"[A-Za-z0-9._-]{1,249}")
# host:port, the host a name, an IPv4 address or a bracketed IPv6 one.
_SERVER = re.compile(r"([A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\]):(\d+)")


@dataclass(frozen=True, kw_only=True)
class KafkaSettings(PublisherSettings):
    """`RELAY_KAFKA_BOOTSTRAP_SERVERS` (`host:port`, comma-separated), `RELAY_KAFKA_TOPIC`,
    `RELAY_KAFKA_SECURITY_PROTOCOL` (`PLAINTEXT`, `SASL_PLAINTEXT`, `SASL_SSL`),
    `RELAY_KAFKA_SASL_MECHANISM`, `RELAY_KAFKA_USERNAME`, `RELAY_KAFKA_PASSWORD` (a secret),
    `RELAY_KAFKA_CA_FILE` and `RELAY_KAFKA_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM`
    (`firestore_outbox.publishers.kafka.publisher`)."""

    name: ClassVar[str] = "kafka"
    bootstrap_servers: str
    topic: str
    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    ca_file: str | None = None
    hostname_check: str = "https"

    def __post_init__(self) -> None:
        """Brokers (each port in 1-65535) and a topic Kafka accepts; SASL protocols need a
        mechanism and both credentials, and those are refused without SASL; a CA file only
        with SASL_SSL, and one that holds PEM certificates."""
        required(
            "RELAY_PUBLISHER=kafka",
            ("RELAY_KAFKA_BOOTSTRAP_SERVERS", self.bootstrap_servers),
            ("RELAY_KAFKA_TOPIC", self.topic),
        )
        for server in self.bootstrap_servers.split(","):
            _check_server(server.strip())
        if not _TOPIC.fullmatch(self.topic):
            raise ConfigError("RELAY_KAFKA_TOPIC must be 1 to 249 letters, digits, '.', '_' or '-'")
        _one_of("RELAY_KAFKA_SECURITY_PROTOCOL", self.security_protocol, PROTOCOLS)
        _one_of(
            "RELAY_KAFKA_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM",
            self.hostname_check,
            HOSTNAME_CHECKS,
        )
        if self.sasl:
            needed_by = f"RELAY_KAFKA_SECURITY_PROTOCOL={self.security_protocol}"
            required(
                needed_by,
                ("RELAY_KAFKA_SASL_MECHANISM", self.sasl_mechanism),
                ("RELAY_KAFKA_USERNAME", self.username),
                ("RELAY_KAFKA_PASSWORD", self.password),
            )
            _one_of("RELAY_KAFKA_SASL_MECHANISM", self.sasl_mechanism or "", MECHANISMS)
        elif self.username or self.password or self.sasl_mechanism:
            raise ConfigError(
                "RELAY_KAFKA_SASL_MECHANISM, RELAY_KAFKA_USERNAME and RELAY_KAFKA_PASSWORD need "
                "RELAY_KAFKA_SECURITY_PROTOCOL=SASL_SSL or SASL_PLAINTEXT"
            )
        if self.ca_file is not None:
            if not self.security_protocol.endswith("SSL"):
                raise ConfigError(
                    "RELAY_KAFKA_CA_FILE needs RELAY_KAFKA_SECURITY_PROTOCOL=SASL_SSL (over "
                    f"{self.security_protocol} no certificate is checked)"
                )
            pem_certificates("RELAY_KAFKA_CA_FILE", self.ca_file)

    @property
    def sasl(self) -> bool:
        """Whether the protocol authenticates with SASL."""
        return self.security_protocol.startswith("SASL_")

    @classmethod
    def from_environment(cls, get: Get) -> KafkaSettings:
        return cls(
            bootstrap_servers=get("RELAY_KAFKA_BOOTSTRAP_SERVERS") or "",
            topic=get("RELAY_KAFKA_TOPIC") or "",
            security_protocol=(get("RELAY_KAFKA_SECURITY_PROTOCOL") or "PLAINTEXT").upper(),
            sasl_mechanism=_upper(get("RELAY_KAFKA_SASL_MECHANISM")),
            username=get("RELAY_KAFKA_USERNAME"),
            password=get("RELAY_KAFKA_PASSWORD"),
            ca_file=get("RELAY_KAFKA_CA_FILE"),
            hostname_check=(
                get("RELAY_KAFKA_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM") or "https"
            ).lower(),
        )

    def destination(self) -> str:
        return self.topic

    def secrets(self) -> tuple[str, ...]:
        return (self.password or "",)


def _check_server(server: str) -> None:
    """`ConfigError` unless `server` is host:port with a port in 1-65535: librdkafka reads a
    port past 65535 modulo 65536 (`:85536` connects to 20000) and takes `:0`."""
    found = _SERVER.fullmatch(server)
    problem = "not host:port" if found is None else port_problem(found.group(2))
    if problem:
        raise ConfigError(
            "RELAY_KAFKA_BOOTSTRAP_SERVERS must be host:port of the brokers, comma-separated: "
            f"{server!r}: {problem}"
        )


def _one_of(variable: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ConfigError(f"{variable} must be one of {', '.join(allowed)}, got {value!r}")


def _upper(value: str | None) -> str | None:
    return None if value is None else value.upper()
