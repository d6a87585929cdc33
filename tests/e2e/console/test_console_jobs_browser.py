"""The console's Re-drive page driven in headless Chromium against the real `outbox console`
and the emulator: a dry run from the form (nothing written), the job started from its
confirm button, listed, and cancelled from the list; a screenshot of each step.

Screenshots go to $CONSOLE_SCREENSHOTS when set (docs/images/console holds the last taken
for the docs), else to the test's temporary directory.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from firestore_outbox.redrive.job import JobState
from firestore_outbox.redrive.jobs import JobStore
from firestore_outbox.redrive.service import jobs_collection
from tests.support.api_servers import ApiProcess, api_server
from tests.support.browser import chromium, distinct_bytes
from tests.support.redrive import seed, update_times

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.common.exceptions import WebDriverException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.wait import WebDriverWait  # noqa: E402

pytestmark = pytest.mark.emulator


@pytest.fixture
def console(db: Any, settings: Any) -> Iterator[ApiProcess]:
    seed(db, settings)
    with api_server(settings, serve="console", args=["--refresh", "3600"]) as server:
        yield server


def shot(driver: Any, name: str, tmp_path: Path) -> None:
    folder = Path(os.environ.get("CONSOLE_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    assert driver.save_screenshot(str(path))
    assert distinct_bytes(path.read_bytes()) > 20, f"{path} looks blank"


def follow(driver: Any, by: str, value: str) -> None:
    """Click what leads to another page; wait until that page has replaced this one."""
    driver.execute_script("window.__leaving = true")
    driver.find_element(by, value).click()
    new_page = "return !window.__leaving && document.readyState === 'complete'"
    WebDriverWait(driver, 30, ignored_exceptions=(WebDriverException,)).until(
        lambda d: d.execute_script(new_page)
    )


def test_a_job_started_from_its_dry_run_is_listed_and_cancelled(
    console: ApiProcess, db: Any, settings: Any, tmp_path: Path
) -> None:
    store = JobStore(db, jobs_collection(settings.outbox_collection), lease_seconds=300, timeout=10)
    before = update_times(db, settings)
    with chromium("--window-size=1200,900") as browser:
        browser.set_page_load_timeout(30)
        browser.get(console.url + "/jobs")
        browser.find_element(By.NAME, "type").send_keys("OrderPaid")
        browser.find_element(By.NAME, "since").send_keys("2026-11-01T08:02:00Z")
        follow(browser, By.CSS_SELECTOR, "#new-job button")
        assert "5 events to send to configured" in browser.find_element(By.ID, "dry-run").text
        assert store.recent() == [] and update_times(db, settings) == before
        shot(browser, "redrive-dry-run", tmp_path)
        browser.find_element(By.NAME, "by").send_keys("ann")
        follow(browser, By.CSS_SELECTOR, "#confirm button")
        assert "created: 5 events" in browser.find_element(By.ID, "result").text
        [job] = store.recent()
        assert (job.state, job.created_by) == (JobState.RUNNING, "ann (console)")
        browser.get(console.url + "/jobs")
        assert job.job_id in browser.find_element(By.ID, "jobs").text
        shot(browser, "redrive-jobs", tmp_path)
        follow(browser, By.XPATH, "//table[@id='jobs']//button[text()='cancel']")
        assert "CANCELLED" in browser.find_element(By.ID, "result").text
    assert store.get(job.job_id).state is JobState.CANCELLED
    assert update_times(db, settings) == before  # the outbox was only read
