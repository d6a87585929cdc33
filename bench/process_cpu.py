"""The CPU time of the benchmark's other processes (Linux): the emulator, downstream and proxy.

A relay run on this machine shares its CPUs with the servers it talks to. Their CPU time per
delivered event says how fast the machine could go at all: with `cpus` CPUs and servers that
spend `s` CPU seconds per event, no relay can make more than `cpus / s` events/s, and a relay
that itself spends `r` per event no more than `cpus / (s + r)`.

A server's CPU is that of its process tree (utime + stime from `/proc/PID/stat` of the process
and every live descendant): the emulator is a Java process under the gcloud wrapper script,
found by the port it listens on, so an emulator started elsewhere (`--emulator`) counts too.
Not on Linux, or when a process cannot be found: None, and the figures are left out.
"""

from __future__ import annotations

import os
from collections import defaultdict

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_LISTEN = "0A"  # TCP state LISTEN in /proc/net/tcp


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (which may hold spaces), or None."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _pids() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []


def tree_cpu(pid: int) -> float | None:
    """CPU seconds (user + system) of `pid` and all its live descendants; None if it is gone."""
    children: dict[int, list[int]] = defaultdict(list)
    cpu: dict[int, float] = {}
    for each in _pids():
        fields = _stat(each)
        if fields is None:
            continue  # ended meanwhile
        # After the name: state(0) ppid(1) ... utime(11) stime(12).
        children[int(fields[1])].append(each)
        cpu[each] = (int(fields[11]) + int(fields[12])) / _TICK
    if pid not in cpu:
        return None
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        total += cpu.get(current, 0.0)
        todo.extend(children.get(current, ()))
    return total


def listener_pid(port: int) -> int | None:
    """The process that listens on TCP `port` (IPv4 or IPv6), or None when none of ours does."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as lines:
                next(lines, None)  # the header
                for line in lines:
                    fields = line.split()
                    local_port = int(fields[1].rsplit(":", 1)[1], 16)
                    if local_port == port and fields[3] == _LISTEN:
                        inodes.add(f"socket:[{fields[9]}]")
        except OSError:
            continue
    if not inodes:
        return None
    for pid in _pids():
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue  # not ours, or gone
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") in inodes:
                    return pid
            except OSError:
                continue
    return None


def port_of(address: str) -> int:
    """The port of `host:port` or `http://host:port/...`."""
    hostport = address.split("://", 1)[-1].split("/", 1)[0]
    return int(hostport.rsplit(":", 1)[1])


class ServerCpu:
    """The CPU seconds named server processes spend between `start()` and `stop()`."""

    def __init__(self, pids: dict[str, int | None]) -> None:
        self._pids = {name: pid for name, pid in pids.items() if pid is not None}
        self._missing = [name for name, pid in pids.items() if pid is None]
        self._start: dict[str, float | None] = {}

    def start(self) -> None:
        self._start = {name: tree_cpu(pid) for name, pid in self._pids.items()}

    def stop(self) -> dict[str, float | None]:
        """Per name: seconds spent, or None where the process could not be measured."""
        spent: dict[str, float | None] = dict.fromkeys(self._missing)
        for name, pid in self._pids.items():
            before, after = self._start.get(name), tree_cpu(pid)
            spent[name] = None if before is None or after is None else round(after - before, 3)
        return spent
