"""One Function Compute instance of the relay function, for `nudge_function.py`: imports the
relay handler once, prints `ready`, then runs one invocation per line on stdin
(`{"id", "event"}`), one at a time (instance concurrency 1, FC 3.0's default), printing
`done <id>` after each. The instance stays up between invocations, with whatever the handler
keeps warm (its Firestore channel, its relay), as a Function Compute instance does."""

from __future__ import annotations

import json
import os
import sys
from types import SimpleNamespace

import nudge_trace

from function_compute.relay_handler import handler


def main() -> None:
    if os.environ.get("BENCH_NUDGE_TRACE"):
        nudge_trace.install(os.environ["BENCH_NUDGE_TRACE"], "instance")
    print("ready", flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        nudge_trace.current[0] = request["id"]
        nudge_trace.mark("handler")
        context = SimpleNamespace(request_id=request["id"], function=SimpleNamespace(timeout=60))
        try:
            handler(request["event"], context)
        except Exception as exc:  # an invocation's error, as FC logs it; the instance lives on
            print(f"error {request['id']} {type(exc).__name__}", file=sys.stderr, flush=True)
        nudge_trace.mark("handler-done")
        nudge_trace.current[0] = None
        print(f"done {request['id']}", flush=True)


if __name__ == "__main__":
    main()
