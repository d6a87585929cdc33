"""Run `function_compute.relay_handler.handler` once, in a process of its own, as Function
Compute runs an invocation: the event on stdin, the summary as the last line of stdout.

    python -m tests.support.handler_process REQUEST_ID < event.json
"""

from __future__ import annotations

import json
import sys

from function_compute.relay_handler import handler
from tests.support.fc_invocation import fc_context

if __name__ == "__main__":
    summary = handler(sys.stdin.buffer.read(), fc_context(sys.argv[1]))
    sys.stdout.write("\nSUMMARY " + json.dumps(summary) + "\n")
