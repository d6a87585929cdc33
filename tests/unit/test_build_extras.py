"""The package build takes the chosen publisher's extra (`--extra`, as s.yaml passes
RELAY_PUBLISHER), and only the requirements of the extras named."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

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


def test_main_adds_each_named_extra_to_fc(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(build, "build", lambda output, **options: calls.append(options) or output)

    build.main(["--output", str(tmp_path), "--extra", "rocketmq"])
    build.main(["--output", str(tmp_path), "--extra", "http"])

    assert [call["extras"] for call in calls] == [("fc", "rocketmq"), ("fc", "http")]


def test_only_the_named_extras_requirements_are_installed(tmp_path: Path) -> None:
    wheel = tmp_path / "firestore_outbox-0.2.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("firestore_outbox-0.2.0.dist-info/METADATA", METADATA)

    chosen = build._requirements(wheel, ("fc", "rocketmq"))

    assert chosen == ["requests<3,>=2.31", "aliyun-fc2<3,>=2.5", "rocketmq-python-client<6,>=5.1"]
    assert build._requirements(wheel, ("fc", "http")) == chosen[:2]  # http has no extra
