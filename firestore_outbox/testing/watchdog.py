"""A watchdog that ends a server's process group when the process that started it dies.

`FirestoreEmulator` and the tests' RabbitMQ node run in process groups of their own (the
launchers leave Java or Erlang children behind), so nothing ends them when their parent is
killed outright: a SIGKILL of pytest or of `outbox emulator`, or CI's timeout, would leave
them running. PR_SET_PDEATHSIG does not help: it reaches only the direct child, not the
grandchildren the launchers start.

The parent holds the only write end of a pipe whose read end is the watchdog's stdin. The
kernel closes the write end however the parent dies, the watchdog reads EOF and kills the
group. A parent that stops its server itself disarms the watchdog first, so the watchdog
never signals a group id that may since have been given to someone else's processes.

This module imports only the standard library: the watchdog runs it as a script (`python -I
firestore_outbox/testing/watchdog.py PGID`), without the package on its path.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

DISARM = b"disarm\n"


class Watchdog:
    """Kills process group `pgid` when this process dies; `disarm()` before stopping it."""

    def __init__(self, pgid: int) -> None:
        read_end, self._write_end = os.pipe()  # not inherited by other children (PEP 446)
        try:
            # A session of its own: a signal to the parent's group (Ctrl-C, a CI runner
            # ending the job's group) must not end the watchdog before it has done its work.
            self._process = subprocess.Popen(
                [sys.executable, "-I", str(Path(__file__).resolve()), str(pgid)],
                stdin=read_end,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        except BaseException:
            os.close(self._write_end)
            raise
        finally:
            os.close(read_end)

    def disarm(self) -> None:
        """Tell the watchdog to exit without killing. It reads DISARM before the EOF however
        slowly it runs, so nothing waits for it here: it is reaped in the background."""
        if self._write_end < 0:
            return
        try:
            os.write(self._write_end, DISARM)
        except BrokenPipeError:
            pass  # the watchdog is gone already
        finally:
            os.close(self._write_end)
            self._write_end = -1
        threading.Thread(target=self._process.wait, name="watchdog-reaper", daemon=True).start()


def watch(pgid: int) -> None:
    """Block on stdin; at EOF without DISARM, kill group `pgid` (the parent has died)."""
    received = b""
    while chunk := os.read(0, 64):
        received += chunk
    if received == DISARM:
        return
    # SIGKILL ends stopped processes too (tests pause the emulator with SIGSTOP); a group
    # that has ended by itself is no longer there to signal.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    watch(int(sys.argv[1]))
