"""The relay benchmark runs a failed run once more instead of losing the whole sweep."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))  # its bare imports

import bench_relay
from runs import SCENARIOS

ARGS = argparse.Namespace(emulator="127.0.0.1:1", config={})  # no emulator is started


def test_a_run_that_fails_once_is_run_again_and_marked(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def flaky(name: str, *_: Any) -> dict[str, Any]:
        calls.append(name)
        if len(calls) == 1:
            raise SystemExit("partitioned in four-relays: a relay worker failed")
        return {"variant": name, "eventsPerSecond": 1.0}

    monkeypatch.setattr(bench_relay, "run", flaky)
    row = bench_relay.attempt(
        ARGS, {"partitioned": None}, "partitioned", SCENARIOS["four-relays"], 10
    )
    assert calls == ["partitioned", "partitioned"]
    assert row["retried"] == "partitioned in four-relays: a relay worker failed"


def test_a_run_that_fails_twice_ends_the_sweep(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_: Any) -> dict[str, Any]:
        raise SystemExit("a relay worker failed")

    monkeypatch.setattr(bench_relay, "run", broken)
    with pytest.raises(SystemExit, match="a relay worker failed"):
        bench_relay.attempt(ARGS, {"today": None}, "today", SCENARIOS["downstream-0ms"], 10)


def test_a_run_that_succeeds_is_not_marked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench_relay, "run", lambda name, *_: {"variant": name})
    row = bench_relay.attempt(ARGS, {"today": None}, "today", SCENARIOS["downstream-0ms"], 10)
    assert "retried" not in row
