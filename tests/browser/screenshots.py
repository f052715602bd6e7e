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
from ui_seed import HISTORY, LONG  # noqa: E402
from ui_server import UIServer  # noqa: E402

OUT = TESTS.parent / "docs" / "pages" / "images"
HISTORY_PATH = quote(HISTORY, safe="")
SHOTS = {
    "ui-sessions.png": "#/user/alice/trip",
    "ui-session.png": "#/session/alice/trip-planning",
    "ui-history.png": f"#/log/alice/trip-planning/{HISTORY_PATH}/1",
    "ui-long-history.png": f"#/log/alice/{LONG}/{HISTORY_PATH}/137",
    "ui-tree.png": "#/tree/alice/trip-porto",
}


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    url = seeded(Path(tempfile.mkdtemp(prefix="praisonsession-shots-")) / "sessions.db")
    with UIServer(url) as server, chromium(width=1200, height=760) as browser:
        for name, where in SHOTS.items():
            browser.get(server.page_url + where)
            time.sleep(1.0)  # the page's one fetch, and layout
            browser.save_screenshot(str(OUT / name))
            print(OUT / name)


if __name__ == "__main__":
    main()
