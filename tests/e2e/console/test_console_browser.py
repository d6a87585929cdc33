"""`outbox console` driven in headless Chromium (Debian's chromium and chromium-driver, through
selenium) against the real command and the emulator: the overview's counts, a requeue and a
release done from the page and seen in Firestore, and a screenshot of each page.

Screenshots go to $CONSOLE_SCREENSHOTS when set (docs/images/console holds the last taken
for the docs), else to the test's temporary directory. The overview's timer never fires
(`--refresh 3600`): the test refreshes it by calling the page's own `outboxRefresh()`.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from google.cloud import firestore

from firestore_outbox.firestore.settings import Settings
from firestore_outbox.ops.status import count_by_status
from tests.support.api_servers import ApiProcess, api_server
from tests.support.browser import chromium, distinct_bytes
from tests.support.console_pages import SECRET, prepared_console_outbox  # noqa: F401
from tests.support.helpers import add_orders, add_raw_event, make_relay

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.common.exceptions import WebDriverException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.wait import WebDriverWait  # noqa: E402

pytestmark = pytest.mark.emulator


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium("--window-size=1200,1000") as driver:
        driver.set_page_load_timeout(30)
        yield driver


@pytest.fixture
def console(settings: Settings, console_outbox: dict[str, Any]) -> Iterator[ApiProcess]:
    args = ["--refresh", "3600"]
    with api_server(settings, serve="console", args=args, RELAY_SIGNING_SECRET=SECRET) as server:
        yield server


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = os.environ.get("CONSOLE_SCREENSHOTS")
    path = Path(folder) if folder else tmp_path_factory.mktemp("console-screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


def screenshot(driver: Any, shots: Path, name: str) -> None:
    path = shots / f"{name}.png"
    assert driver.save_screenshot(str(path))
    assert distinct_bytes(path.read_bytes()) > 20, f"{path} looks blank"


def cells(driver: Any, table_id: str) -> list[list[str]]:
    rows = driver.find_elements(By.CSS_SELECTOR, f"#{table_id} tbody tr")
    return [[td.text for td in row.find_elements(By.TAG_NAME, "td")] for row in rows]


def follow(driver: Any, by: str, value: str) -> None:
    """Click what leads to another page and wait until that page has replaced this one and
    loaded: the old page carries a marker a new one cannot have. (Waiting for the old <html>
    to go stale raced the navigation: Chromium answered "Node with given id does not belong
    to the document" while the document was being swapped.)"""
    driver.execute_script("window.__leaving = true")
    driver.find_element(by, value).click()
    new_page = "return !window.__leaving && document.readyState === 'complete'"
    WebDriverWait(driver, 30, ignored_exceptions=(WebDriverException,)).until(
        lambda d: d.execute_script(new_page)
    )


def refresh(driver: Any) -> None:
    """The overview's own refresh, now, and wait for it to finish."""
    driver.set_script_timeout(30)
    driver.execute_async_script("window.outboxRefresh().then(arguments[arguments.length - 1]);")


def test_the_overview_counts_what_firestore_holds_and_charts_it(
    browser: Any,
    console: ApiProcess,
    console_outbox: dict[str, Any],
    db: firestore.Client,
    settings: Settings,
    shots: Path,
) -> None:
    browser.get(console.url + "/")
    shown = {status: int(n) for status, n in cells(browser, "counts")}
    assert shown == console_outbox["counts"] == count_by_status(db, settings.outbox_collection)
    assert "relay-7f3a" in browser.find_element(By.TAG_NAME, "main").text
    assert "order-held" in browser.find_element(By.ID, "held").text
    recent = browser.find_element(By.ID, "recent").text
    assert "1 delivered" in recent and "5 failed" in recent
    # The last half hour is charted from the first load: the event delivered just now.
    series = {
        line.get_attribute("data-series")
        for line in browser.find_elements(By.CSS_SELECTOR, "svg#recent polyline")
    }
    assert series == {"delivered per minute", "backlog"}
    legend = browser.find_element(By.CSS_SELECTOR, "svg#recent").get_attribute("textContent")
    assert "delivered per minute 1" in legend, legend
    add_raw_event(db, settings, "arrived-meanwhile")
    refresh(browser)
    refresh(browser)
    shown = {status: int(n) for status, n in cells(browser, "counts")}
    assert shown["PENDING"] == console_outbox["counts"]["PENDING"] + 1
    lines = browser.find_elements(By.CSS_SELECTOR, "svg.chart polyline")
    assert {line.get_attribute("data-series") for line in lines} >= {"PENDING", "FAILED"}
    assert browser.execute_script("return window.pwned") is None
    screenshot(browser, shots, "overview")


def test_with_the_downstream_refusing_the_overview_shows_the_broken_channel_first(
    browser: Any, console: ApiProcess, db: firestore.Client, settings: Settings, shots: Path
) -> None:
    add_orders(db, settings, 6)
    with socket.socket() as closed:  # a port nothing listens on: every connection refused
        closed.bind(("127.0.0.1", 0))
        refused = f"http://127.0.0.1:{closed.getsockname()[1]}/events"
    summary = make_relay(db, settings, refused, concurrency=1).run()
    assert summary["stoppedBy"] == "channel", summary

    browser.get(console.url + "/")
    health = browser.find_element(By.ID, "health")
    assert "alert" in health.get_attribute("class").split()
    problem = health.find_element(By.CSS_SELECTOR, "[data-problem=channel_broken]").text
    assert summary["channel"] in problem and " since " in problem
    assert "stopped by channel" in browser.find_element(By.ID, "last-run").text
    # The health panel comes before the backlog's figures.
    order = browser.execute_script(
        "return [...document.querySelectorAll('#health, #counts')].map(e => e.id)"
    )
    assert order == ["health", "counts"]
    assert "busy" in browser.find_element(By.ID, "partitions").text
    screenshot(browser, shots, "overview-broken-channel")


def test_a_failed_event_requeued_from_the_page_is_pending_with_the_requeue_recorded(
    browser: Any, console: ApiProcess, db: firestore.Client, settings: Settings, shots: Path
) -> None:
    browser.get(console.url + "/failed")
    assert len(cells(browser, "failed")) == 5
    screenshot(browser, shots, "failed")
    browser.find_element(By.NAME, "type").send_keys("PaymentTaken")
    follow(browser, By.CSS_SELECTOR, "form.filters button")
    assert [row[1] for row in cells(browser, "failed")] == ["f-422"]
    browser.find_element(By.CSS_SELECTOR, "input[name=id][value=f-422]").click()
    follow(browser, By.CSS_SELECTOR, "#selection button")
    assert "1 FAILED events to requeue" in browser.find_element(By.ID, "dry-run").text
    assert db.collection(settings.outbox_collection).document("f-422").get().get("status") == (
        "FAILED"
    )  # the dry run wrote nothing
    screenshot(browser, shots, "requeue-confirm")
    follow(browser, By.CSS_SELECTOR, "#confirm button")
    assert "Requeued 1 events" in browser.find_element(By.ID, "result").text
    event = db.collection(settings.outbox_collection).document("f-422").get().to_dict() or {}
    assert (event["status"], event["attempts"], event["requeues"]) == ("PENDING", 0, 1)
    assert event["requeuedAt"] is not None and event["lastError"].startswith("rejected")
    browser.get(console.url + "/event?id=xss")
    assert "<script>" in browser.find_element(By.ID, "payload").text  # shown as text
    assert SECRET not in browser.page_source
    assert browser.execute_script("return window.pwned") is None
    screenshot(browser, shots, "event")


def test_a_held_aggregate_released_from_the_page_lets_its_later_events_go(
    browser: Any, console: ApiProcess, db: firestore.Client, settings: Settings, shots: Path
) -> None:
    browser.get(console.url + "/held")
    assert [row[1] for row in cells(browser, "held")] == ["order-held"]
    screenshot(browser, shots, "held")
    follow(browser, By.LINK_TEXT, "Release…")
    assert "held-head" in browser.find_element(By.ID, "dry-run").text
    follow(browser, By.CSS_SELECTOR, "#confirm button")
    assert "Released 1 held events" in browser.find_element(By.ID, "result").text
    head = db.collection(settings.outbox_collection).document("held-head").get().to_dict() or {}
    assert (head["status"], head["held"]) == ("FAILED", False)
    assert head["heldReleasedAt"] is not None
    browser.get(console.url + "/held")
    assert "No aggregate is held" in browser.find_element(By.TAG_NAME, "main").text
