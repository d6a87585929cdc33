"""A warm Function Compute runtime for `bench_nudge.py`: imports the relay handler once,
then forks a NEW PROCESS per invocation (one JSON line on stdin: `{"id", "event"}`); each
child runs `handler(event, context)`, prints `done <id>` and exits. A fork copies the imports
and nothing else (no Firestore channel, no relay): each invocation connects and builds its
relay as a fresh instance would, without paying Python's imports again."""

from __future__ import annotations

import json
import os
import signal
import sys
from types import SimpleNamespace

from function_compute.relay_handler import handler


def main() -> None:
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children reaped by the kernel
    print("ready", flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        if os.fork() == 0:
            code = 0
            try:
                context = SimpleNamespace(
                    request_id=request["id"], function=SimpleNamespace(timeout=60)
                )
                handler(request["event"], context)
            except BaseException:
                code = 1
            finally:
                sys.stdout.write(f"done {request['id']}\n")
                sys.stdout.flush()
                os._exit(code)


if __name__ == "__main__":
    main()
