"""The session browser in a real headless Chromium (Debian's, installed by
``browser/install_chromium.sh`` when missing): pages load, navigation works, a 10,000-message
history pages without loading the whole log, user data is shown as text, and no script fails."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import pytest
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from chromium import ERROR_TRAP, chromium, script_errors
from remote_server import SessionServer
from test_ui import ADMIN, ALICE, seeded
from ui_page import DRAW_SECONDS, open_view
from ui_seed import (
    ALICE_MEMORIES,
    BOB_MEMORY,
    HISTORY,
    LONG,
    NASTY_ID,
    NOTES,
    UPDATED_MEMORY,
    data_dir_for,
)
from ui_server import UIServer

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]  # a real browser: make test


@pytest.fixture(scope="module")
def ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UIServer]:
    url = seeded(tmp_path_factory.mktemp("ui-browser") / "sessions.db")
    with UIServer(url, data_dir=data_dir_for(url)) as server:
        yield server


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as session:
        session.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": ERROR_TRAP})
        yield session


@pytest.fixture(autouse=True)
def no_script_errors(browser: Any) -> Iterator[None]:
    script_errors(browser)  # start clean
    yield
    assert script_errors(browser) == []


def wait_for(browser: Any, check: Any, timeout: float = DRAW_SECONDS) -> Any:
    ignored = (NoSuchElementException, StaleElementReferenceException)  # mid-redraw
    return WebDriverWait(browser, timeout, ignored_exceptions=ignored).until(lambda _: check())


def heading(browser: Any) -> str:
    return wait_for(browser, lambda: browser.find_element(By.CSS_SELECTOR, "main h1").text)


def shown_messages(browser: Any) -> list[tuple[int, str]]:
    shown = []
    for node in browser.find_elements(By.CSS_SELECTOR, "#messages .message"):
        content = node.find_elements(By.CSS_SELECTOR, ".content")  # a tool call may have none
        shown.append((int(node.get_attribute("data-index")), content[0].text if content else ""))
    return shown


def click_link(browser: Any, text: str) -> None:
    wait_for(browser, lambda: browser.find_element(By.LINK_TEXT, text)).click()


def history_reads(browser: Any) -> list[tuple[str, str]]:
    """``(start, limit)`` of each history read the page made since the last call, once there is
    one (resource timing may list a fetch a moment after its answer was drawn)."""
    reads: list[dict[str, list[str]]] = []

    def seen() -> list[dict[str, list[str]]]:
        names = browser.execute_script(
            "const names = performance.getEntriesByType('resource').map(e => e.name);"
            "performance.clearResourceTimings(); return names;"
        )
        reads.extend(parse_qs(urlsplit(name).query) for name in names if "/api/messages?" in name)
        return reads

    wait_for(browser, seen)
    return [(read["start"][0], read["limit"][0]) for read in reads]


def test_navigation_from_users_to_history_page_2_to_the_fork_tree(ui: UIServer, browser: Any):
    open_view(browser, ui.page_url)
    assert heading(browser) == "Users"
    click_link(browser, "alice")
    wait_for(browser, lambda: "Sessions of" in heading(browser))
    search = browser.find_element(By.ID, "search")
    search.send_keys("long")
    search.submit()
    wait_for(browser, lambda: len(browser.find_elements(By.CSS_SELECTOR, "#sessions li")) == 1)
    click_link(browser, LONG)
    wait_for(browser, lambda: browser.find_element(By.ID, "session-id").text == LONG)
    click_link(browser, HISTORY)
    wait_for(browser, lambda: shown_messages(browser)[:1] == [(0, "message 0")])
    browser.find_element(By.CSS_SELECTOR, "button.next").click()
    wait_for(browser, lambda: shown_messages(browser)[:1] == [(50, "message 50")])
    assert shown_messages(browser) == [(n, f"message {n}") for n in range(50, 100)]
    assert "page 2 of 200" in browser.find_element(By.CSS_SELECTOR, ".page-info").text
    browser.back()
    wait_for(browser, lambda: shown_messages(browser)[:1] == [(0, "message 0")])

    open_view(browser, ui.page_url + "#/session/alice/trip-porto")
    click_link(browser, "fork tree")
    current = wait_for(browser, lambda: browser.find_element(By.CSS_SELECTOR, "#tree .current"))
    assert current.text == "trip-porto"
    # drawn as a tree: trip-planning > trip-porto > trip-porto-budget
    path = "li > a[href$='/trip-planning'] ~ ul > li > a[href$='/trip-porto'] ~ ul > li > a"
    assert [a.text for a in browser.find_elements(By.CSS_SELECTOR, "#tree " + path)] == [
        "trip-porto-budget"
    ]
    assert "chat-000" not in browser.find_element(By.ID, "tree").text  # only its own tree
    click_link(browser, "trip-porto-budget")
    wait_for(browser, lambda: browser.find_element(By.ID, "session-id").text == "trip-porto-budget")
    open_view(browser, ui.page_url + "#/tree/alice")  # every tree of the user: no session's toolbar
    wait_for(browser, lambda: "chat-000" in browser.find_element(By.ID, "tree").text)
    assert "null" not in browser.find_element(By.TAG_NAME, "main").text


def test_a_session_page_shows_state_tool_calls_summaries_usage_and_snapshots(
    ui: UIServer, browser: Any
):
    open_view(browser, ui.page_url + "#/session/alice/trip-planning")
    wait_for(browser, lambda: browser.find_element(By.ID, "session-id").text == "trip-planning")
    assert "Lisbon" in browser.find_element(By.ID, "state").text
    assert "weather is mild" in browser.find_element(By.ID, "summaries").text
    usage = browser.find_element(By.ID, "usage").text
    assert "(session)" in usage and str(352 + 427 + 250) in usage
    assert "before-booking" in browser.find_element(By.ID, "snapshots").text
    click_link(browser, HISTORY)
    call = wait_for(browser, lambda: browser.find_element(By.CSS_SELECTOR, ".toolcall"))
    assert "get_weather" in call.text and '"city": "Lisbon"' in call.text
    assert "answers call_1" in browser.find_elements(By.CSS_SELECTOR, ".message")[3].text


def test_a_10000_message_history_pages_smoothly(ui: UIServer, browser: Any):
    base = ui.page_url + "#/log/alice/" + quote(LONG, safe="") + "/" + quote(HISTORY, safe="")
    browser.execute_script("performance.clearResourceTimings()")  # this test's reads from here
    open_view(browser, base + "/1")
    assert shown_messages(browser)[:1] == [(0, "message 0")]
    assert history_reads(browser) == [("0", "50")]
    for page in (200, 137, 2, 199):
        jump = browser.find_element(By.ID, "page-input")
        jump.clear()
        jump.send_keys(str(page))
        jump.submit()
        first = (page - 1) * 50
        expected = [(first, f"message {first}")]
        wait_for(browser, lambda expected=expected: shown_messages(browser)[:1] == expected)
        assert history_reads(browser) == [(str(first), "50")]  # one page, never the whole log
        assert shown_messages(browser) == [(n, f"message {n}") for n in range(first, first + 50)]
        info = browser.find_element(By.CSS_SELECTOR, ".page-info").text
        assert f"page {page} of 200" in info and "of 10000" in info
    browser.find_element(By.CSS_SELECTOR, "button.last").click()
    wait_for(browser, lambda: shown_messages(browser)[-1:] == [(9999, "message 9999")])
    # only one page is in the page at a time
    assert len(browser.find_elements(By.CSS_SELECTOR, ".message")) == 50


def test_ids_and_messages_are_shown_as_text_never_run(ui: UIServer, browser: Any):
    open_view(browser, ui.page_url + "#/user/alice")
    link = wait_for(browser, lambda: browser.find_element(By.LINK_TEXT, NASTY_ID))
    link.click()
    wait_for(browser, lambda: browser.find_element(By.ID, "session-id").text == NASTY_ID)
    click_link(browser, HISTORY)
    wait_for(browser, lambda: shown_messages(browser) == [(0, "<b>hi")])
    open_view(browser, ui.page_url + "#/log/alice/trip-planning/" + quote(HISTORY, safe="") + "/1")
    wait_for(browser, lambda: len(shown_messages(browser)) == 7)
    assert "<script>alert('not run')</script>" in shown_messages(browser)[5][1]
    assert browser.execute_script("return window.__pwned === undefined")
    assert browser.find_elements(By.CSS_SELECTOR, "main img, main script, main b") == []


@pytest.mark.parametrize("where", ["ui", "serve"])
def test_a_guarded_browser_asks_for_the_token(ui: UIServer, browser: Any, where: str):
    if where == "ui":
        guarded, page = UIServer(ui.store_url, token=ADMIN), "/"
    else:  # the same page on the session server, at /ui/
        guarded, page = SessionServer(ui.store_url, token=ADMIN), "/ui"
    with guarded:
        open_view(browser, guarded.base_url + page)
        box = wait_for(browser, lambda: browser.find_element(By.ID, "token"))
        assert heading(browser) == "Token needed"
        box.send_keys(ADMIN)
        box.submit()
        wait_for(browser, lambda: heading(browser) == "Users")
        assert browser.find_element(By.ID, "users").text.split() == ["alice", "bob"]
        click_link(browser, "bob")
        click_link(browser, "support")
        wait_for(browser, lambda: browser.find_element(By.ID, "session-id").text == "support")
    script_errors(browser)  # the first 401 is logged as a failed load, by design


def shown_memories(browser: Any) -> list[str]:
    return [
        node.find_element(By.CSS_SELECTOR, ".memory-text").text
        for node in browser.find_elements(By.CSS_SELECTOR, "#memories .memory")
    ]


def test_the_sessions_list_pages_forward_and_back(ui: UIServer, browser: Any):
    def first_and_count() -> tuple[str, int]:
        rows = browser.find_elements(By.CSS_SELECTOR, "#sessions li a")
        return rows[0].text, len(rows)

    open_view(browser, ui.page_url + "#/user/alice")
    wait_for(browser, lambda: browser.find_elements(By.CSS_SELECTOR, "#sessions li"))
    page_one = first_and_count()
    assert page_one[1] == 50 and browser.find_elements(By.ID, "prev-page") == []
    browser.find_element(By.ID, "next-page").click()
    wait_for(browser, lambda: first_and_count()[1] == 16)  # 66 sessions
    assert browser.find_elements(By.ID, "next-page") == []
    browser.find_element(By.ID, "prev-page").click()
    wait_for(browser, lambda: first_and_count() == page_one)
    assert browser.find_elements(By.ID, "prev-page") == []
    # a page opened by its address alone (a new tab: no pages seen) finds its way back too
    browser.find_element(By.ID, "next-page").click()
    wait_for(browser, lambda: first_and_count()[1] == 16)
    second = browser.current_url
    browser.execute_script("sessionStorage.clear()")
    browser.get("about:blank")
    open_view(browser, second)
    wait_for(browser, lambda: first_and_count()[1] == 16)
    browser.find_element(By.ID, "prev-page").click()
    wait_for(browser, lambda: first_and_count() == page_one)


def test_memories_show_as_text_page_forward_and_back_with_their_history(ui: UIServer, browser: Any):
    open_view(browser, ui.page_url + "#/user/alice")
    click_link(browser, "memories")
    wait_for(browser, lambda: "Long-term memories of" in heading(browser))
    page_one = [UPDATED_MEMORY, *ALICE_MEMORIES[1:20]]
    wait_for(browser, lambda: shown_memories(browser) == page_one)
    assert BOB_MEMORY not in browser.find_element(By.ID, "main").text
    first = browser.find_elements(By.CSS_SELECTOR, "#memories .memory")[0]
    assert '"topic": "travel"' in first.text and "trip-planning" in first.text
    assert "created 20" in first.text and "updated 20" in first.text
    first.find_element(By.CSS_SELECTOR, "button.history").click()
    changes = wait_for(
        browser, lambda: first.find_element(By.CSS_SELECTOR, ".memory-history table")
    )
    rows = [row.text for row in changes.find_elements(By.CSS_SELECTOR, "tbody tr")]
    assert len(rows) == 2 and rows[0].startswith("ADD") and rows[1].startswith("UPDATE")
    assert UPDATED_MEMORY in rows[1] and ALICE_MEMORIES[0] in rows[1]  # the text it replaced
    browser.find_element(By.ID, "memories-next-page").click()
    wait_for(browser, lambda: shown_memories(browser) == ALICE_MEMORIES[20:])
    assert browser.find_elements(By.ID, "memories-next-page") == []
    browser.find_element(By.ID, "memories-prev-page").click()
    wait_for(browser, lambda: shown_memories(browser) == page_one)

    # a session's short-term notes, from its page; markup in a note stays text
    open_view(browser, ui.page_url + "#/session/alice/trip-planning")
    click_link(browser, "short-term memories")
    wait_for(browser, lambda: shown_memories(browser) == NOTES)
    assert "Short-term memories of" in heading(browser)
    assert browser.find_elements(By.CSS_SELECTOR, "main i") == []


def test_a_user_token_never_shows_another_users_memories(ui: UIServer, browser: Any):
    args = ("--user-token", f"alice={ALICE}")
    with UIServer(ui.store_url, args=args, data_dir=data_dir_for(ui.store_url)) as guarded:
        open_view(browser, guarded.page_url + "#/memories/alice")
        box = wait_for(browser, lambda: browser.find_element(By.ID, "token"))
        box.send_keys(ALICE)
        box.submit()
        wait_for(browser, lambda: len(shown_memories(browser)) == 20)
        for where in ("#/memories/bob", "#/memories/bob/support"):
            open_view(browser, guarded.page_url + where)  # not the error shown before
            error = browser.find_element(By.ID, "error")
            assert "only user 'alice'" in error.text
            assert BOB_MEMORY not in browser.find_element(By.TAG_NAME, "body").text
    script_errors(browser)  # the refused requests are logged as failed loads, by design
