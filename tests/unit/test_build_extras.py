"""The package build takes the chosen publisher's extra (`--extra`, from `s.yaml`)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from function_compute import build

METADATA = """Metadata-Version: 2.1
Name: firestore-outbox
Requires-Dist: urllib3<3,>=2
Requires-Dist: aliyun-fc2<3,>=2.5; extra == "fc"
Requires-Dist: pika<2,>=1.3; extra == "amqp"
Requires-Dist: matplotlib>=3.7; extra == "bench"
"""


def test_the_chosen_extra_adds_its_packages_and_an_unknown_name_adds_none(
    tmp_path: Path,
) -> None:
    wheel = tmp_path / "firestore_outbox-0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("firestore_outbox-0.dist-info/METADATA", METADATA)

    assert build._requirements(wheel, ("fc", "amqp")) == [
        "urllib3<3,>=2",
        "aliyun-fc2<3,>=2.5",
        "pika<2,>=1.3",
    ]
    assert build._requirements(wheel, ("fc", "http")) == ["urllib3<3,>=2", "aliyun-fc2<3,>=2.5"]


def test_the_command_passes_each_extra_beside_fc(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []
    monkeypatch.setattr(build, "build", lambda output, **options: calls.append(options) or output)

    build.main(["--output", str(tmp_path / "fc"), "--extra", "amqp"])

    assert calls == [{"local": False, "extras": ("fc", "amqp")}]
