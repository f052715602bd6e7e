"""A real headless Chromium (Debian's, installed by ``browser/install_chromium.sh``) driven by
selenium through Debian's ``chromedriver``: never a downloaded browser.

    with chromium() as browser:
        browser.get(url)
        script_errors(browser)   # console errors and uncaught exceptions so far
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["CHROMIUM_FLAGS", "chromium", "install_chromium", "script_errors"]

INSTALLER = Path(__file__).resolve().parent / "browser" / "install_chromium.sh"
#: A deadline for a page's load, not a measure: a loaded machine's browser may take its time.
PAGE_LOAD_SECONDS = 120
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
)


def install_chromium() -> tuple[str, str]:
    """Paths of chromium and chromedriver, installing them first when missing."""
    if not (shutil.which("chromium") and shutil.which("chromedriver")):
        subprocess.run(["sh", str(INSTALLER)], check=True, timeout=900)
    browser, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not browser or not driver:
        raise RuntimeError(f"{INSTALLER} ran, yet chromium or chromedriver is not on PATH.")
    return browser, driver


@contextmanager
def chromium(width: int = 1280, height: int = 900) -> Iterator[Any]:
    """A fresh browser (its own profile folder), quit afterwards."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    browser, driver = install_chromium()
    profile = tempfile.mkdtemp(prefix="praisonsession-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.add_argument(f"--window-size={width},{height}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    session = webdriver.Chrome(service=Service(driver), options=options)
    try:
        session.set_page_load_timeout(PAGE_LOAD_SECONDS)
        yield session
    finally:
        session.quit()
        shutil.rmtree(profile, ignore_errors=True)


#: Installed on every page by the tests: records uncaught errors the console log may miss.
ERROR_TRAP = (
    "window.__errors = window.__errors || [];"
    "window.addEventListener('error', e => window.__errors.push(String(e.message)));"
    "window.addEventListener('unhandledrejection', e => window.__errors.push(String(e.reason)));"
)


def script_errors(browser: Any) -> list[str]:
    """Severe console entries (script errors, failed loads) and trapped errors so far."""
    logged = [
        entry["message"] for entry in browser.get_log("browser") if entry["level"] == "SEVERE"
    ]
    trapped = browser.execute_script("return window.__errors || [];") or []
    return logged + list(trapped)
