"""The documentation site builds strictly, its generated reference covers the code, and a page
of it works offline in a real browser (Debian's chromium through chromedriver).

The site is built once per run (about 4 s here) into a temporary directory."""

from __future__ import annotations

import functools
import http.server
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import firestore_outbox
from tests.support.browser import chromium, png_colours
from tests.unit.test_docs import variables_read_by_the_code

ROOT = Path(__file__).resolve().parents[2]
# Nothing may leave the machine: every name but localhost's resolves to nothing.
OFFLINE = "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    return out


def test_every_variable_the_code_reads_is_on_the_configuration_page(site: Path) -> None:
    page = (site / "reference" / "configuration" / "index.html").read_text()
    missing = [name for name in sorted(variables_read_by_the_code()) if name not in page]
    assert not missing, f"not on the configuration page: {missing}"


def test_every_public_name_renders_with_its_docstring(site: Path) -> None:
    page = (site / "reference" / "api" / "index.html").read_text()
    for name in firestore_outbox.__all__:
        module = getattr(firestore_outbox, name).__module__
        anchor = f'id="{module}.{name}"'
        assert anchor in page, f"firestore_outbox.{name} is not on the API page"
        section = page[page.index(anchor) :]
        contents = section[section.index('class="doc doc-contents') :][:4000]
        first_line = (getattr(firestore_outbox, name).__doc__ or "").strip().split()[0]
        assert first_line.strip("`.,:") in contents, f"{name}: its docstring did not render"


def test_no_page_asks_for_a_cdn(site: Path) -> None:
    for page in site.rglob("*.html"):
        text = page.read_text()
        for host in ("unpkg.com", "cdn.jsdelivr.net", "fonts.googleapis.com", "fonts.gstatic"):
            assert host not in text, f"{page.relative_to(site)} loads from {host}"


@pytest.fixture
def served(site: Path) -> Iterator[str]:
    handler = functools.partial(QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def test_a_page_renders_navigation_and_a_diagram_offline(served: str, tmp_path: Path) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    performance = {"goog:loggingPrefs": {"performance": "ALL"}}
    with chromium(OFFLINE, "--window-size=1280,1000", capabilities=performance) as driver:
        driver.set_page_load_timeout(60)
        driver.get(f"{served}/concepts/relay/")
        # The theme replaces the diagram's source with a rendered one (a closed shadow root).
        rendered = (
            "const d = document.querySelector('div.mermaid');"
            "return d ? d.getBoundingClientRect().height : 0"
        )
        WebDriverWait(driver, 30).until(lambda d: d.execute_script(rendered) > 100)
        links = driver.execute_script(
            "return document.querySelectorAll('nav.md-nav--primary a.md-nav__link').length"
        )
        assert links >= 20, f"the navigation has {links} links"
        diagram = driver.find_element("css selector", "div.mermaid")
        driver.execute_script("arguments[0].scrollIntoView()", diagram)
        shot = diagram.screenshot_as_png
        (tmp_path / "diagram.png").write_bytes(shot)
        page_shot = driver.get_screenshot_as_png()
        requested = [
            json.loads(entry["message"])["message"]["params"]["request"]["url"]
            for entry in driver.get_log("performance")
            if '"Network.requestWillBeSent"' in entry["message"]
        ]
    # The browser's own chrome:// pages are not the network; every http(s) or ws(s) request is.
    network = [url for url in requested if url.startswith(("http:", "https:", "ws:", "wss:"))]
    outside = [url for url in network if not url.startswith(served)]
    assert network and not outside, f"requests left localhost: {outside}"
    assert any(url.endswith("/assets/vendor/mermaid.min.js") for url in network)
    for png in (shot, page_shot):
        colours, inked = png_colours(png)
        assert colours >= 3 and inked > 0.01, f"blank screenshot: {colours} colours, {inked:.1%}"
