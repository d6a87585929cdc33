"""The watchdog shares no fate with the relay: its handler imports neither the relay's core nor
any publisher's implementation (a relay that cannot import them still has its watchdog)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PROBE = """
import sys
from firestore_outbox.function_compute import watchdog_handler
heavy = [m for m in sys.modules if m.startswith("firestore_outbox.relay.run.")
         or m.startswith("firestore_outbox.relay.publish.")
         or m.startswith("firestore_outbox.publishers.")
         and m not in ("firestore_outbox.publishers.base", "firestore_outbox.publishers.http",
                       "firestore_outbox.publishers.http.urls")]
print(sorted(heavy))
"""


def test_the_watchdog_imports_nothing_of_the_relays_delivery() -> None:
    ran = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "[]"
