"""The benchmark's machine ceiling: server CPU measured from /proc, and the bounds from it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest

from bench.ceiling import beside, ceiling
from bench.process_cpu import ServerCpu, listener_pid, port_of, tree_cpu

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

# A parent that starts a child spinning on the CPU, then sleeps: the CPU is all the child's.
_SPINNING_CHILD = (
    "import subprocess, sys, time\n"
    "child = subprocess.Popen([sys.executable, '-c', 'while True: pass'])\n"
    "print(child.pid, flush=True)\n"
    "time.sleep(60)\n"
)


@linux
def test_tree_cpu_counts_the_busy_child_of_an_idle_parent() -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", _SPINNING_CHILD], stdout=subprocess.PIPE, text=True
    )
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    try:
        meter = ServerCpu({"server": parent.pid, "gone": None})
        meter.start()
        own_before = tree_cpu(child)
        deadline = time.monotonic() + 30
        while (tree_cpu(child) or 0) - (own_before or 0) < 0.3 and time.monotonic() < deadline:
            time.sleep(0.05)
        spent = meter.stop()
    finally:
        subprocess.run(["kill", str(child)], check=False)
        parent.kill()
        parent.wait()
    assert spent["gone"] is None
    assert spent["server"] is not None and spent["server"] >= 0.3


@linux
def test_a_process_that_is_gone_has_no_cpu() -> None:
    finished = subprocess.Popen([sys.executable, "-c", "pass"])
    finished.wait()  # reaped: its /proc entry is gone
    assert tree_cpu(finished.pid) is None


@linux
def test_the_listener_of_a_port_is_found() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert listener_pid(port) == os.getpid()


def test_port_of_reads_host_port_and_urls() -> None:
    assert port_of("127.0.0.1:8080") == 8080
    assert port_of("http://127.0.0.1:5001/events") == 5001


def test_ceiling_is_cpus_over_cpu_per_event() -> None:
    bound = ceiling(1.0, {"emulator": 3.0, "downstream": 1.0}, 1000, 2)
    # Others 4 ms per event: 2 CPUs make 500 events/s; with the relay's 1 ms, 400.
    assert bound["withoutRelayCpu"] == 500.0
    assert bound["withRelayCpu"] == 400.0
    assert bound["cpuMsPerEvent"] == {
        "relay": 1.0,
        "emulator": 3.0,
        "downstream": 1.0,
        "others": 4.0,
    }


def test_no_ceiling_when_a_server_was_not_measured() -> None:
    assert ceiling(1.0, {"emulator": None, "downstream": 1.0}, 1000, 2) == {}
    assert ceiling(1.0, {"emulator": 3.0}, 0, 2) == {}


def test_a_target_beyond_the_ceiling_is_called_unreachable() -> None:
    row = {"ceiling": ceiling(1.0, {"emulator": 3.0, "downstream": 1.0}, 1000, 2)}
    far = beside(25 * 40.0, row, 40.0)
    assert far["eventsPerSecondNeeded"] == 1000.0
    assert far["ratioWithoutRelayCpu"] == 12.5
    assert far["reachableOnThisMachine"] is False
    near = beside(1.3 * 300.0, row, 300.0)
    assert near["reachableOnThisMachine"] is True
    assert beside(1000.0, {}, 40.0) == {}
