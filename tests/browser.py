"""Headless Chromium for the browser tests (``torchmsa view``'s page, the server's page):
Selenium driving Debian's chromium through its chromedriver, whose path is given, so Selenium
Manager never downloads anything. Skips with the reason where either is missing."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

CHROMIUM = os.environ.get("TORCHMSA_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("TORCHMSA_CHROMEDRIVER", "/usr/bin/chromedriver")
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


def chromium(width: int, height: int):
    """A generator for a fixture: yields a started driver (browser console logs kept), quits
    it and removes its profile afterwards."""
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
    from selenium.webdriver.chrome.service import Service

    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.path.exists(p)]
    if missing:
        pytest.skip(
            f"Chromium not found ({', '.join(missing)}): apt-get install -y chromium "
            f"chromium-driver, or set TORCHMSA_CHROMIUM / TORCHMSA_CHROMEDRIVER"
        )
    profile = tempfile.mkdtemp(prefix="torchmsa-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*FLAGS, f"--window-size={width},{height}", f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    try:
        driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    except Exception as exc:  # any failure to start means: no usable browser here
        shutil.rmtree(profile, ignore_errors=True)
        first = (str(exc).strip().splitlines() or [""])[0]
        pytest.skip(f"Chromium could not be started: {type(exc).__name__}: {first}")
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)
