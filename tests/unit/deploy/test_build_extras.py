"""`outbox fc build` takes the chosen publisher's extra (`--extra`, as s.yaml passes
RELAY_PUBLISHER), the `otel` extra when its environment asks for OTLP export, and asks pip for
the library with exactly those extras."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path
from typing import Any

import pytest

from firestore_outbox.cli import main
from firestore_outbox.deploy import build
from firestore_outbox.deploy.requirements import Requirements

OTEL_VARIABLES = (
    "OTEL_SDK_DISABLED",
    "OTEL_TRACES_EXPORTER",
    "OTEL_METRICS_EXPORTER",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
)


def built_extras(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, environment: dict[str, str] | None = None
) -> list[tuple[str, ...]]:
    """The extras each `outbox fc build` builds with, the OTEL_* variables being
    `environment`'s."""
    monkeypatch.chdir(tmp_path)  # no .env of the checkout's
    for name in OTEL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name, value in (environment or {}).items():
        monkeypatch.setenv(name, value)
    calls: list[tuple[str, ...]] = []

    def record(output: Path, **options: Any) -> build.Built:
        calls.append(tuple(options["extras"]))
        return build.Built(output)

    monkeypatch.setattr(build, "build", record)
    return calls


def test_each_named_extra_is_added_to_the_base_extras(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls = built_extras(monkeypatch, tmp_path)

    assert main(["fc", "build", "--extra", "rocketmq"]) == 0
    assert main(["fc", "build", "--extra", "http"]) == 0

    assert calls == [(*build.BASE_EXTRAS, "rocketmq"), (*build.BASE_EXTRAS, "http")]


@pytest.mark.parametrize(
    "environment",
    [
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "https://p.cn-hangzhou.log.aliyuncs.com/opentelemetry"},
        {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://arms.example/adapt_TOKEN/api/otlp/traces"},
        {"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://arms.example/adapt_TOKEN/api/otlp/metrics"},
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "none"},
    ],
)
def test_an_otlp_endpoint_in_the_environment_adds_the_otel_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, environment: dict[str, str]
) -> None:
    calls = built_extras(monkeypatch, tmp_path, environment)

    main(["fc", "build", "--extra", "rocketmq"])
    main(["fc", "build", "--extra", "otel"])  # named too: once

    assert calls == [
        (*build.BASE_EXTRAS, "rocketmq", "otel"),
        (*build.BASE_EXTRAS, "otel"),
    ]


@pytest.mark.parametrize(
    "environment",
    [
        {},  # no endpoint: the relay installs nothing, so neither does the build
        {"OTEL_TRACES_EXPORTER": "otlp"},
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"},
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318",
            "OTEL_TRACES_EXPORTER": "none",
            "OTEL_METRICS_EXPORTER": "none",
        },
    ],
)
def test_without_otlp_export_the_build_adds_no_otel_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, environment: dict[str, str]
) -> None:
    calls = built_extras(monkeypatch, tmp_path, environment)

    main(["fc", "build"])

    assert calls == [build.BASE_EXTRAS]


def test_pip_is_asked_for_the_library_with_the_extras_chosen() -> None:
    team = Requirements(("requests>=2.31", "firestore-outbox==0.7.0"))
    chosen = team.with_extras("firestore-outbox", build.extras_for(["kafka"], {}))
    assert chosen.lines == ("requests>=2.31", "firestore-outbox[fc,crypto,kafka]==0.7.0")


def test_confluent_kafka_is_in_the_package_only_when_the_deployment_uses_kafka() -> None:
    requires = importlib.metadata.requires("firestore-outbox") or []
    kafka = [r for r in requires if r.startswith("confluent-kafka")]
    assert kafka and all('extra == "kafka"' in r or 'extra == "dev"' in r for r in kafka)
    assert "kafka" not in build.extras_for([], {})
