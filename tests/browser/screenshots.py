"""Takes the screenshots of docs/pages/ui.md: a seeded SQLite store, ``praisonsession ui`` on
127.0.0.1, Debian's headless Chromium. Run it by hand after changing the page:

    python tests/browser/screenshots.py

The test run never writes these files.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

TESTS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TESTS))

from chromium import chromium  # noqa: E402
from test_ui import seeded  # noqa: E402
from ui_page import open_view  # noqa: E402
from ui_seed import HISTORY, LONG, data_dir_for  # noqa: E402
from ui_server import UIServer  # noqa: E402

OUT = TESTS.parent / "docs" / "pages" / "images"
HISTORY_PATH = quote(HISTORY, safe="")
#: file -> (the page, what shows once it is drawn, a button to press before the shot)
SHOTS = {
    "ui-sessions.png": ("#/user/alice/trip", "#sessions", None),
    "ui-session.png": ("#/session/alice/trip-planning", "#state", None),
    "ui-history.png": (f"#/log/alice/trip-planning/{HISTORY_PATH}/1", ".toolcall", None),
    "ui-long-history.png": (f"#/log/alice/{LONG}/{HISTORY_PATH}/137", "#messages", None),
    "ui-tree.png": ("#/tree/alice/trip-porto", "#tree .current", None),
    "ui-memories.png": ("#/memories/alice", ".memory", "button.history"),
}


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="praisonsession-shots-") as folder:
        take_shots(seeded(Path(folder) / "sessions.db"))


def take_shots(url: str) -> None:
    """The screenshots of the store at ``url``, seeded (memories beside it), into ``OUT``."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    server = UIServer(url, data_dir=data_dir_for(url))
    with server, chromium(width=1200, height=760) as browser:
        for name, (where, drawn, press) in SHOTS.items():
            open_view(browser, server.page_url + where)  # not the view before it
            WebDriverWait(browser, 30).until(
                lambda b, drawn=drawn: b.find_elements(By.CSS_SELECTOR, drawn)
            )
            if press is not None:
                browser.find_element(By.CSS_SELECTOR, press).click()
                WebDriverWait(browser, 30).until(
                    lambda b: b.find_elements(By.CSS_SELECTOR, ".memory-history table")
                )
            time.sleep(0.5)  # layout
            browser.save_screenshot(str(OUT / name))
            print(OUT / name)


if __name__ == "__main__":
    main()
