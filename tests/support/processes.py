"""Which processes hold a listening port, and which are in a process group (Linux /proc)."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp's st column


def listening_inodes(port: int) -> set[str]:
    """The socket inodes listening on TCP `port`, IPv4 or IPv6."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == _LISTEN and int(local.rsplit(":", 1)[1], 16) == port:
                inodes.add(inode)
    return inodes


def listeners(port: int) -> set[int]:
    """The pids of this user's processes that hold a socket listening on `port`."""
    wanted = {f"socket:[{inode}]" for inode in listening_inodes(port)}
    found = set()
    for fd_dir in Path("/proc").glob("[0-9]*/fd"):
        try:
            if any(os.readlink(fd) in wanted for fd in fd_dir.iterdir()):
                found.add(int(fd_dir.parent.name))
        except OSError:
            continue  # another user's process, or one that has just exited
    return found


def group_members(pgid: int) -> set[int]:
    """The pids of the live (not zombie) processes in process group `pgid`."""
    members = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            # The command name may hold spaces and parentheses: fields follow the last ')'.
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.add(int(stat.parent.name))
    return members


def wait_until_gone(pgid: int, port: int, bound: float) -> tuple[set[int], set[str]]:
    """Poll for at most `bound` seconds until group `pgid` is empty and nothing listens on
    `port`; return what is left of each (both empty on success)."""
    deadline = time.monotonic() + bound
    while True:
        members, sockets = group_members(pgid), listening_inodes(port)
        if not (members or sockets) or time.monotonic() > deadline:
            return members, sockets
        time.sleep(0.2)


def kill_group(pgid: int) -> None:
    """Clean-up after a failed test: end a group the test itself caused to be started."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)
