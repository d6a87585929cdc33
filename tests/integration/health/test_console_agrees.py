"""The console's health panel and the watchdog's alert say the same thing: on one outbox (a
broken channel, FAILED events, a partition lease held by a relay that died), every problem
the watchdog alerts on is on the overview, in the same words, and nothing else is."""

from __future__ import annotations

import datetime as dt
import html
import re
import socket

import requests
from google.cloud import firestore

from firestore_outbox.config.loader import Configuration
from firestore_outbox.config.wiring import make_watchdog
from firestore_outbox.firestore.settings import Settings
from tests.support.console_pages import serving
from tests.support.helpers import add_orders, add_own_event, make_relay, outbox, utcnow


def test_the_overview_shows_exactly_the_problems_the_watchdog_alerts_on(
    db: firestore.Client, settings: Settings
) -> None:
    add_orders(db, settings, 6)
    add_own_event(db, settings, "rejected", status="FAILED", attempts=1, lastError="HTTP 422")
    # The dead relay's lease on a partition with no event: no run takes it back meanwhile.
    used = {e.get("partition") for e in outbox(db, settings).values()}
    empty = next(p for p in range(16) if p not in used)
    expired = utcnow() - dt.timedelta(minutes=10)
    db.collection("outbox_partitions").document(str(empty)).set(
        {"holder": "relay-gone", "expiresAt": expired, "updatedAt": expired}
    )
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        refused = f"http://127.0.0.1:{closed.getsockname()[1]}/events"
    assert make_relay(db, settings, refused, concurrency=1).run()["stoppedBy"] == "channel"

    environ = {
        "FIRESTORE_EMULATOR_HOST": str(settings.emulator_host),
        "FIRESTORE_PROJECT_ID": str(settings.project_id),
    }
    report = make_watchdog(Configuration.load(environ)).check()
    alerted = {p.code.value: p.message for p in report.health.problems}
    assert set(alerted) == {"channel_broken", "failed_growing", "stuck_lease"}

    with serving(settings) as url:
        page = requests.get(f"{url}/live", timeout=30).text
    shown = {
        code: html.unescape(re.sub(r"<[^>]+>", "", text)).strip()
        for code, text in re.findall(
            r"<li data-problem=(\w+)><strong>\w+</strong>: (.*?)</li>", page
        )
    }
    assert shown == alerted
