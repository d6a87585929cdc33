"""The publisher benchmark's harness on a tiny run: every publisher side by side, and what it
counts is what the endpoints took."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.kafka import tansu_command
from tests.support.rabbitmq import server_command

ROOT = Path(__file__).resolve().parents[2]


def test_a_smoke_run_times_every_publisher_and_counts_their_requests(tmp_path: Path) -> None:
    out = tmp_path / "publishers"
    command = [sys.executable, str(ROOT / "bench" / "bench_publishers.py"), "--smoke"]
    done = subprocess.run(
        [*command, f"--out={out}"], capture_output=True, text=True, timeout=240, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(out.with_suffix(".json").read_text())
    expected = {"http", "fc", "fc3", "mns-queue", "mns-topic", "eventbridge", "rocketmq"}
    if server_command() is not None:
        expected.add("amqp")
    if tansu_command() is not None:
        expected.add("kafka")
    assert set(report["rates"]) == expected
    assert all(rate > 0 for rates in report["rates"].values() for rate in rates)
    sent = report["requestsPerEvent"]
    # One request per event where the API takes one event a request; batches where it takes
    # many (16 threads publishing at once share a 5 ms linger).
    for name in ("http", "fc", "fc3", "mns-topic", "rocketmq"):
        assert sent[name] == 1.0, name
    for name in ("mns-queue", "eventbridge"):
        assert 0 < sent[name] < 1.0, name
    if "kafka" in expected:  # produce requests, as librdkafka counts them
        assert 0 < sent["kafka"] <= 1.0
