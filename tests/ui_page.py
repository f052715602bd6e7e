"""The session browser's page in Chromium: open a view, then wait until the page has drawn it.

A route (``#/log/...``) opened on the page already loaded is a hash change: the page keeps the
view it showed until its fetch answers and it draws the new one. So a wait for "entries are
shown" is met at once by the previous view's entries, and reading them a moment later finds
them detached. ``open_view`` waits until the view shown before is gone and the page is past its
first "Loading…"; what the test then reads is the view it opened.

    open_view(browser, ui.page_url + "#/log/ann/lg-trip/langgraph.checkpoints/1")
"""

from __future__ import annotations

from typing import Any

from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

__all__ = ["DRAW_SECONDS", "open_view"]

#: A deadline, not a measure: a loaded machine's browser and server may take their time.
DRAW_SECONDS = 120.0

#: index.html's placeholder, shown until the first view is drawn.
_DRAWN = """
const main = document.getElementById("main");
return !!main && main.children.length > 0 && main.textContent.trim() !== "Loading…";
"""


def _gone(node: Any) -> bool:
    try:
        node.is_enabled()  # any call on a node no longer in the page raises
    except StaleElementReferenceException:
        return True
    return False


def open_view(browser: Any, url: str, timeout: float = DRAW_SECONDS) -> None:
    """Opens ``url`` (reloading it when it is the page's own address, where no hash change
    would draw anything) and returns once the page shows that view, drawn whole."""
    before = browser.find_elements(By.CSS_SELECTOR, "#main > *")
    if browser.current_url == url:
        browser.refresh()
    else:
        browser.get(url)
    WebDriverWait(browser, timeout).until(
        lambda _: all(_gone(node) for node in before) and browser.execute_script(_DRAWN)
    )
