"""The package build takes the chosen publisher's extra (`--extra`, as s.yaml passes
RELAY_PUBLISHER), the `otel` extra when its environment asks for OTLP export, and only the
requirements of the extras named."""

from __future__ import annotations

import importlib.metadata
import zipfile
from pathlib import Path

import pytest

from function_compute import build

METADATA = """Metadata-Version: 2.1
Name: firestore-outbox
Version: 0.2.0
Requires-Dist: requests<3,>=2.31
Requires-Dist: aliyun-fc2<3,>=2.5; extra == "fc"
Requires-Dist: alibabacloud-eventbridge<2,>=1.3; extra == "eventbridge"
Requires-Dist: rocketmq-python-client<6,>=5.1; extra == "rocketmq"
Requires-Dist: pytest>=8; extra == "dev"
"""


OTEL_VARIABLES = (
    "OTEL_SDK_DISABLED",
    "OTEL_TRACES_EXPORTER",
    "OTEL_METRICS_EXPORTER",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
)


def built_extras(
    monkeypatch: pytest.MonkeyPatch, environment: dict[str, str] | None = None
) -> list[tuple[str, ...]]:
    """The extras each `build.main` call builds with, the OTEL_* variables being `environment`'s."""
    for name in OTEL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name, value in (environment or {}).items():
        monkeypatch.setenv(name, value)
    calls: list[tuple[str, ...]] = []
    monkeypatch.setattr(
        build, "build", lambda output, **options: calls.append(options["extras"]) or output
    )
    return calls


def test_main_adds_each_named_extra_to_the_base_extras(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls = built_extras(monkeypatch)

    build.main(["--output", str(tmp_path), "--extra", "rocketmq"])
    build.main(["--output", str(tmp_path), "--extra", "http"])

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
    calls = built_extras(monkeypatch, environment)

    build.main(["--output", str(tmp_path), "--extra", "rocketmq"])
    build.main(["--output", str(tmp_path), "--extra", "otel"])  # named too: once

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
    calls = built_extras(monkeypatch, environment)

    build.main(["--output", str(tmp_path)])

    assert calls == [build.BASE_EXTRAS]


def test_only_the_named_extras_requirements_are_installed(tmp_path: Path) -> None:
    wheel = tmp_path / "firestore_outbox-0.2.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("firestore_outbox-0.2.0.dist-info/METADATA", METADATA)

    chosen = build._requirements(wheel, ("fc", "rocketmq"))

    assert chosen == ["requests<3,>=2.31", "aliyun-fc2<3,>=2.5", "rocketmq-python-client<6,>=5.1"]
    assert build._requirements(wheel, ("fc", "http")) == chosen[:2]  # http has no extra


def test_confluent_kafka_is_in_the_package_only_when_the_deployment_uses_kafka(
    tmp_path: Path,
) -> None:
    requires = importlib.metadata.requires("firestore-outbox") or []
    kafka = [r for r in requires if r.startswith("confluent-kafka")]
    assert kafka and all('extra == "kafka"' in r or 'extra == "dev"' in r for r in kafka)
    wheel = tmp_path / "firestore_outbox-0.5.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        lines = "".join(f"Requires-Dist: {r}\n" for r in requires)
        archive.writestr("firestore_outbox-0.5.0.dist-info/METADATA", f"Name: x\n{lines}")

    without = build._requirements(wheel, build.BASE_EXTRAS)
    with_kafka = build._requirements(wheel, (*build.BASE_EXTRAS, "kafka"))

    assert not any(r.startswith("confluent-kafka") for r in without)
    assert [r for r in with_kafka if r not in without] == ["confluent-kafka<3,>=2.3"]
