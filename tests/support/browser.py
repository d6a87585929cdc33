"""Headless Chromium for the browser tests (Debian's chromium and chromium-driver through
selenium), and reading the screenshots it takes without an imaging library."""

from __future__ import annotations

import shutil
import struct
import tempfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
# Without the background-networking flags Chromium's own connections are refused by this
# machine's closed network, many at a time.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
)


@contextmanager
def chromium(*flags: str, capabilities: dict[str, Any] | None = None) -> Iterator[Any]:
    """A selenium driver of headless Chromium with a profile of its own and `flags` added;
    the test is skipped where Debian's chromium or chromium-driver is missing (.ci/run
    installs them)."""
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        pytest.skip("Debian's chromium and chromium-driver are not installed (.ci/run does)")
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="chromium-profile-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*FLAGS, *flags, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    for name, value in (capabilities or {}).items():
        options.set_capability(name, value)
    # The driver's path given: Selenium Manager looks nothing up and downloads nothing.
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def _chunks(png: bytes) -> Iterator[tuple[bytes, bytes]]:
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos = 8
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos : pos + 4])
        yield png[pos + 4 : pos + 8], png[pos + 8 : pos + 8 + length]
        pos += 12 + length


def distinct_bytes(png: bytes) -> int:
    """How many distinct byte values the image's filtered pixel rows hold: a blank page has 2
    or 3 (the row filter and white), a rendered one hundreds."""
    return len(set(zlib.decompress(b"".join(d for kind, d in _chunks(png) if kind == b"IDAT"))))


def png_colours(png: bytes) -> tuple[int, float]:
    """Distinct colours in an 8-bit RGB(A) PNG, and the share of pixels unlike the corner's."""
    idat, width, channels = b"", 0, 4
    for kind, data in _chunks(png):
        if kind == b"IHDR":
            width, _, depth, colour_type = struct.unpack(">IIBB", data[:10])
            assert depth == 8 and colour_type in (2, 6)
            channels = 3 if colour_type == 2 else 4
        elif kind == b"IDAT":
            idat += data
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
