"""The documentation site builds strictly, its generated reference covers the code, and a page
of it works offline in a real browser (Debian's chromium through chromedriver).

The site is built once per run (about 4 s here) into a temporary directory."""

from __future__ import annotations

import functools
import http.server
import json
import shutil
import struct
import subprocess
import sys
import threading
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

import firestore_outbox
from tests.unit.test_docs import variables_read_by_the_code

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    # Nothing may leave the machine: every name but localhost's resolves to nothing.
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1",
    "--window-size=1280,1000",
)


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
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        pytest.skip(
            "Debian's chromium and chromium-driver are not installed (.ci/run installs them)"
        )
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.support.ui import WebDriverWait

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    try:
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
    finally:
        driver.quit()
    # The browser's own chrome:// pages are not the network; every http(s) or ws(s) request is.
    network = [url for url in requested if url.startswith(("http:", "https:", "ws:", "wss:"))]
    outside = [url for url in network if not url.startswith(served)]
    assert network and not outside, f"requests left localhost: {outside}"
    assert any(url.endswith("/assets/vendor/mermaid.min.js") for url in network)
    for png in (shot, page_shot):
        colours, inked = png_colours(png)
        assert colours >= 3 and inked > 0.01, f"blank screenshot: {colours} colours, {inked:.1%}"


def png_colours(png: bytes) -> tuple[int, float]:
    """Distinct colours in an 8-bit RGB(A) PNG, and the share of pixels unlike the corner's."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    channels = 4
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos : pos + 4])
        kind, data = png[pos + 4 : pos + 8], png[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, _, depth, colour_type = struct.unpack(">IIBB", data[:10])
            assert depth == 8 and colour_type in (2, 6)
            channels = 3 if colour_type == 2 else 4
        elif kind == b"IDAT":
            idat += data
        pos += 12 + length
    raw, stride = zlib.decompress(idat), width * channels
    rows, previous = [], bytearray(stride)
    for start in range(0, len(raw), stride + 1):
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up, corner = previous[i], previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                near = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                line[i] = (line[i] + near) & 0xFF
        rows.append(bytes(line))
        previous = line
    pixels = [row[i : i + channels] for row in rows for i in range(0, stride, channels)]
    background = pixels[0]
    return len(set(pixels)), sum(p != background for p in pixels) / len(pixels)
