"""A reader that stops reading is not a failure: `outbox status | head -1` ends quietly.

`head` closes the pipe after its first line; the command's next write (or the interpreter's
last flush) raises `BrokenPipeError`. `main` catches it around everything, argparse's `--help`
included, and does what the Python documentation recommends (the `signal` module's "Note on
SIGPIPE"): point stdout at `os.devnull`, so that the flush at exit has nowhere to fail, and
end with no `error:` line. The exit status is the command's own when it had finished (only
the final flush failed), else 0: the reader took what it wanted.

A `BrokenPipeError` from a socket (a downstream that hung up) is not this: it counts only when
stdout itself is a pipe whose reader is gone (`poll` says `POLLERR` on its write end).
"""

from __future__ import annotations

import os
import select
import sys

__all__ = ["stdout_closed", "stdout_to_devnull"]


def stdout_closed() -> bool:
    """Whether stdout is a pipe (or socket) that no one reads any more."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # replaced by a test's capture, or closed
        return False
    if not hasattr(select, "poll"):  # Windows: no poll; a closed pipe is what it can be
        return True
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))


def stdout_to_devnull() -> None:
    """Point stdout's descriptor at /dev/null: what is still buffered goes nowhere, quietly."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)
