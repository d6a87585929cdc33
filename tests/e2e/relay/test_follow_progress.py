"""`outbox relay --follow` says what it is doing: a start line, progress lines at a bounded
rate, and a summary with the same keys in every run (zeros included).

Before, it printed nothing until it stopped, and its summary had only the counters that had
moved (`unscheduled`, `batches`, `lagMs`, ... came and went from run to run)."""

from __future__ import annotations

import datetime
import itertools
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from google.cloud import firestore

from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.relay.follow.progress import SUMMARY_KEYS
from tests.e2e.cli.test_cli_arguments import OUTBOX
from tests.support.helpers import add_orders, relay_environment

EVERY = 1.0


def follow(
    variables: dict[str, str], cwd: Path, seconds: float
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run a follower for `seconds` at LOG_LEVEL=INFO; (summary, its JSON log lines)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FIRESTORE_", "RELAY_"))}
    env.update(variables, LOG_LEVEL="INFO")
    follower = subprocess.Popen(
        [OUTBOX, "relay", "--follow", "--progress-every", "1s"],
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert follower.stderr is not None
    # Its start line means its SIGTERM handler is in place (start-up is slow on a busy machine).
    first = [follower.stderr.readline()]
    while first[-1] and "relay.follow_started" not in first[-1]:
        first.append(follower.stderr.readline())
    time.sleep(seconds)
    follower.send_signal(signal.SIGTERM)
    stdout, rest = follower.communicate(timeout=30)
    stderr = "".join(first) + rest
    assert follower.returncode == 0, stderr
    assert "Traceback" not in stderr
    return json.loads(stdout), [json.loads(line) for line in stderr.splitlines()]


def test_follow_mode_logs_start_and_bounded_progress_and_a_summary_of_fixed_keys(
    db: firestore.Client, settings: Settings, receiver: Receiver, tmp_path: Path
) -> None:
    variables = relay_environment(settings, receiver.url)
    add_orders(db, settings, 3)
    busy, lines = follow(variables, tmp_path, 4.5)

    assert busy["processed"] == 3
    events = [line.get("event") for line in lines]
    assert events[0] == "relay.follow_started"
    progress = [line for line in lines if line.get("event") == "relay.follow_progress"]
    assert len(progress) >= 2
    assert progress[-1]["processed"] == 3
    times = [datetime.datetime.fromisoformat(p["time"].replace("Z", "+00:00")) for p in progress]
    gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(times)]
    assert min(gaps) >= EVERY - 0.01, gaps  # never more often than asked

    idle, _ = follow(variables, tmp_path, 1.5)  # nothing to do: the same keys, zeros
    assert set(busy) == set(idle) == SUMMARY_KEYS
    assert idle["processed"] == 0
