"""Once a process opts in (`keep_rocketmq_out_of_home()`), the RocketMQ client is imported and
used without writing to the user's home: a real publish from a fresh interpreter whose `HOME`
is an empty temporary folder leaves it empty and leaves no temporary folder behind; the
client's log records come out as the relay's JSON lines. Without the opt-in the library leaves
`HOME` alone and the client writes its log where it says."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.rocketmq_server import ACCESS_KEY, SECRET_KEY, RocketMqServer

ROOT = Path(__file__).resolve().parents[3]

SCRIPT = """
import json, logging, os, sys
from firestore_outbox.observability.logs import configure_logging
from firestore_outbox.publishers.registry import publisher_for
from firestore_outbox.publishers.rocketmq.settings import RocketMqSettings
from firestore_outbox.publishers.base import Delivery
from firestore_outbox.publishers.rocketmq.client import keep_rocketmq_out_of_home

configure_logging([], "INFO")
keep_rocketmq_out_of_home()
home = os.environ["HOME"]
settings = RocketMqSettings(
    endpoints=sys.argv[1], topic="orders", access_key=sys.argv[2], secret_key=sys.argv[3]
)
publisher = publisher_for(settings, {"connect_timeout": 5.0, "read_timeout": 10.0})
assert os.environ["HOME"] == home, "HOME not restored"
delivery = Delivery("e-1", "OrderCreated", "/shop", "o-1", "2026-11-22T08:00:00Z", b"{}", 1)
result = publisher.publish(delivery)
publisher.close()
logging.getLogger("rocketmq-python-client").warning("the client's own logger")
print(json.dumps({"outcome": result.outcome.value, "error": result.error}))
"""


@pytest.fixture
def server() -> Iterator[RocketMqServer]:
    server = RocketMqServer().start()
    yield server
    server.stop()


def test_the_rocketmq_client_writes_nothing_to_the_users_home(
    server: RocketMqServer, tmp_path: Path
) -> None:
    home, scratch = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    scratch.mkdir()
    env = {**os.environ, "HOME": str(home), "TMPDIR": str(scratch), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, server.endpoints, ACCESS_KEY, SECRET_KEY],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.splitlines()[-1]) == {"outcome": "delivered", "error": None}
    assert list(home.iterdir()) == []
    assert list(scratch.iterdir()) == []  # the import's temporary home is gone too
    lines = [json.loads(line) for line in done.stderr.splitlines() if line.strip()]
    assert any(line.get("message") == "the client's own logger" for line in lines), lines
    assert [s.keys[0] for s in server.sent] == ["e-1"]


def test_without_the_opt_in_the_library_leaves_home_alone(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    script = (
        "import os\n"
        "from firestore_outbox.publishers.rocketmq.client import rocketmq_client\n"
        "home = os.environ['HOME']\n"
        "rocketmq_client()\n"
        "assert os.environ['HOME'] == home\n"
    )
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, cwd=tmp_path, capture_output=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert (home / "logs" / "rocketmq_python").is_dir()  # the client's own doing
