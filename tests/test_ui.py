"""The session browser's JSON API and command, over a real SQLite store served by a real
``praisonsession ui`` (and ``serve``) process on 127.0.0.1. The page itself is driven in
Chromium by test_ui_browser.py."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from praisonsession import AsyncSession
from praisonsession._internal import runtime
from praisonsession.recall.vectors import chroma_client
from praisonsession.session.options import resolve_store
from praisonsession.settings import Settings
from praisonsession.stores.api import SessionBase
from ui_seed import (
    ALICE_MEMORIES,
    BOB_MEMORY,
    HISTORY,
    LONG,
    NASTY_ID,
    NOTES,
    UPDATED_MEMORY,
    data_dir_for,
    seed_memories,
    seed_store,
)
from ui_server import ServerWithMemories, UIServer

pytestmark = pytest.mark.timeout(120)

ADMIN = "admin-token-for-tests"
ALICE = "alice-token-for-tests"


def seeded(path: Path, long_messages: int = 10_000) -> str:
    """A SQLite store at ``path`` seeded for browsing, its memories in ``data_dir_for``."""
    url = f"sqlite:///{path}"

    async def fill() -> None:
        settings = Settings(data_dir=data_dir_for(url))
        store = resolve_store(url, settings)
        try:
            await seed_store(store, long_messages)
            await seed_memories(store, settings)
        finally:
            await store.close()

    asyncio.run(fill())
    return url


@pytest.fixture(scope="module")
def store_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    return seeded(tmp_path_factory.mktemp("ui") / "sessions.db")


@pytest.fixture(scope="module")
def ui(store_url: str) -> Iterator[UIServer]:
    with UIServer(store_url, data_dir=data_dir_for(store_url)) as server:
        yield server


def get(
    server: UIServer, path: str, token: str | None = None, **params: object
) -> requests.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return requests.get(server.base_url + path, params=params, headers=headers, timeout=30)


def test_users_and_the_page_files(ui: UIServer) -> None:
    assert get(ui, "/api/users").json() == {"users": ["alice", "bob"]}
    page = get(ui, "/")
    assert page.headers["content-type"].startswith("text/html")
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert '<script src="app.js"' in page.text
    assert "textContent" in get(ui, "/app.js").text
    assert get(ui, "/style.css").headers["content-type"].startswith("text/css")
    assert get(ui, "/nothing.js").status_code == 404


def test_sessions_page_by_page_and_search(ui: UIServer) -> None:
    seen: list[str] = []
    after = None
    while True:
        page = get(ui, "/api/sessions", user="alice", limit=7, after=after).json()
        seen += [row["session_id"] for row in page["sessions"]]
        after = page["next"]
        if after is None:
            break
    assert len(seen) == 66 and seen == sorted(seen) and len(set(seen)) == 66
    assert NASTY_ID in seen and LONG in seen
    found = get(ui, "/api/sessions", user="alice", q="TRIP").json()
    assert [row["session_id"] for row in found["sessions"]] == [
        "trip-lisbon-family",
        "trip-planning",
        "trip-porto",
        "trip-porto-budget",
    ]
    assert found["next"] is None
    assert [row["forked"] for row in found["sessions"]] == [True, False, True, True]
    titled = get(ui, "/api/sessions", user="alice", q="to lisbon").json()["sessions"]
    assert "trip-planning" in [row["session_id"] for row in titled]
    assert all(row["title"] == "Trip to Lisbon" for row in titled)


def test_a_sessions_state_summaries_usage_and_snapshots(ui: UIServer) -> None:
    details = get(ui, "/api/session", user="alice", id="trip-planning").json()
    assert details["session"]["metadata"] == {"title": "Trip to Lisbon"}
    assert details["state"] == {"city": "Lisbon", "budget_eur": 1200, "dates": ["May 3", "May 9"]}
    assert details["children"] == ["trip-lisbon-family", "trip-porto"]
    assert details["parent"] is None
    assert {"log": HISTORY, "messages": 7} in details["logs"]
    [summary] = details["summaries"]["assistant"]
    assert summary["covers"] == [0, 5]
    # two turns (352 + 427 tokens) and the summary call (250)
    assert details["usage"]["session"]["total_tokens"] == 352 + 427 + 250
    assert details["usage"]["agents"]["assistant"]["requests"] == 4
    [snapshot] = details["snapshots"]
    assert snapshot["label"] == "before-booking" and snapshot["messages"] == 10
    fork = get(ui, "/api/session", user="alice", id="trip-porto").json()
    assert fork["parent"] == {"session_id": "trip-planning", "user_id": "alice"}


def test_history_is_read_one_page_at_a_time(ui: UIServer) -> None:
    page = get(ui, "/api/messages", user="alice", id=LONG, log=HISTORY, start=9950, limit=50)
    body = page.json()
    assert body["total"] == 10_000 and body["start"] == 9950
    assert [m["content"] for m in body["messages"]] == [f"message {n}" for n in range(9950, 10_000)]
    past = get(ui, "/api/messages", user="alice", id=LONG, log=HISTORY, start=20_000).json()
    assert past["messages"] == [] and past["total"] == 10_000
    calls = get(ui, "/api/messages", user="alice", id="trip-planning", log=HISTORY).json()
    assert calls["messages"][2]["tool_calls"][0]["function"]["name"] == "get_weather"


def test_the_fork_tree(ui: UIServer) -> None:
    tree = get(ui, "/api/tree", user="alice").json()["tree"]
    [root] = [node for node in tree if node["session_id"] == "trip-planning"]
    assert [child["session_id"] for child in root["children"]] == [
        "trip-lisbon-family",
        "trip-porto",
    ]
    [porto] = [c for c in root["children"] if c["session_id"] == "trip-porto"]
    assert [c["session_id"] for c in porto["children"]] == ["trip-porto-budget"]
    assert "trip-porto" not in [node["session_id"] for node in tree]


def test_memories_long_term_page_by_page_with_history_and_short_term_notes(ui: UIServer) -> None:
    seen: list[dict[str, Any]] = []
    after = None
    while True:
        page = get(ui, "/api/memories", user="alice", after=after, limit=10).json()
        assert page["kind"] == "long" and page["location"].endswith("chroma")
        seen += page["memories"]
        after = page["next"]
        if after is None:
            break
    assert [m["text"] for m in seen] == [UPDATED_MEMORY, *ALICE_MEMORIES[1:]]  # oldest first
    assert len({m["id"] for m in seen}) == 25
    first = seen[0]
    assert first["metadata"]["topic"] == "travel"
    assert first["metadata"]["session_id"] == "trip-planning"
    assert first["metadata"]["updated_at"] > first["metadata"]["created_at"]
    history = get(ui, "/api/memory_history", user="alice", memory=first["id"]).json()["history"]
    assert [(c["event"], c["text"], c["previous"]) for c in history] == [
        ("ADD", ALICE_MEMORIES[0], None),
        ("UPDATE", UPDATED_MEMORY, ALICE_MEMORIES[0]),
    ]
    notes = get(ui, "/api/memories", user="alice", id="trip-planning").json()
    assert notes["kind"] == "short" and notes["next"] is None
    assert [m["text"] for m in notes["memories"]] == NOTES
    note = notes["memories"][0]
    assert note["metadata"]["memory_type"] == "short"
    changes = get(ui, "/api/memory_history", user="alice", memory=note["id"], id="trip-planning")
    assert [c["event"] for c in changes.json()["history"]] == ["ADD"]
    # bob's memory is bob's alone; a user or session with none gets an empty page
    bob = get(ui, "/api/memories", user="bob").json()["memories"]
    assert [m["text"] for m in bob] == [BOB_MEMORY]
    assert BOB_MEMORY not in str(seen)
    assert get(ui, "/api/memories", user="carol").json() == {
        "kind": "long",
        "memories": [],
        "next": None,
        "location": chroma_folder(ui),
    }
    assert get(ui, "/api/memories", user="alice", id="chat-000").json()["memories"] == []
    assert get(ui, "/api/memory_history", user="bob", memory=first["id"]).json() == {"history": []}


def chroma_folder(ui: UIServer) -> str:
    return str(data_dir_for(ui.store_url).resolve() / "chroma")


@pytest.mark.slow
def test_reading_memories_writes_nothing(tmp_path: Path) -> None:
    """The browser opens no collection it would have to create and loads no model."""
    from praisonsession.apps.ui.memories import MemoryBrowser

    url = f"sqlite:///{tmp_path / 'sessions.db'}"

    async def look() -> tuple[dict, dict, list]:
        settings = Settings(data_dir=tmp_path / "data")
        store = resolve_store(url, settings)
        try:
            await seed_memories(store, settings)
            browser = MemoryBrowser(store, settings)
            client = chroma_client(browser.location)
            before = sorted(c.name for c in client.list_collections())
            nobody = await browser.memories("nobody")
            history = await browser.history("nobody", "m0")
            after = sorted(c.name for c in client.list_collections())
            assert after == before
            return nobody, await browser.memories("bob"), history
        finally:
            await store.close()

    nobody, bob, history = asyncio.run(look())
    assert nobody["memories"] == [] and history == []
    assert [m["text"] for m in bob["memories"]] == [BOB_MEMORY]

    async def nothing_yet() -> dict:
        settings = Settings(data_dir=tmp_path / "empty")
        store = resolve_store(f"sqlite:///{tmp_path / 'other.db'}", settings)
        try:
            from praisonsession.apps.ui.memories import MemoryBrowser

            return await MemoryBrowser(store, settings).memories("alice")
        finally:
            await store.close()

    assert asyncio.run(nothing_yet())["memories"] == []
    assert not (tmp_path / "empty" / "chroma").exists()  # not even the folder


@pytest.mark.slow
def test_memories_sealed_with_the_encryption_key_are_shown_opened(tmp_path: Path) -> None:
    import base64

    from praisonsession.apps.ui.memories import MemoryBrowser

    key = base64.urlsafe_b64encode(b"u" * 32).decode()
    settings = Settings(data_dir=tmp_path / "data", encryption_key=key)

    async def look() -> tuple[dict, dict]:
        store = resolve_store(f"sqlite:///{tmp_path / 's.db'}", settings)  # sealed too
        try:
            await seed_memories(store, settings)
            browser = MemoryBrowser(store, settings)
            return await browser.memories("bob"), await browser.memories("alice", "trip-planning")
        finally:
            await store.close()

    bob, notes = asyncio.run(look())
    assert [m["text"] for m in bob["memories"]] == [BOB_MEMORY]
    assert [m["text"] for m in notes["memories"]] == NOTES
    stored = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    assert b"locker code" not in stored and b"Alfama" not in stored


@pytest.mark.parametrize(
    ("path", "params", "status", "said"),
    [
        ("/api/sessions", {"user": "alice", "limit": 0}, 400, "limit must be"),
        ("/api/sessions", {"user": "alice", "limit": "ten"}, 400, "whole number"),
        ("/api/messages", {"user": "alice", "id": LONG, "log": HISTORY, "start": -1}, 400, "start"),
        (
            "/api/messages",
            {"user": "alice", "id": LONG, "log": HISTORY, "start": 2**63},
            400,
            "start must be an int >= 0 and at most 9,223,372,036,854,775,807",
        ),
        ("/api/messages", {"user": "alice", "id": LONG}, 400, "Name the log"),
        ("/api/session", {"user": "alice", "id": "no-such"}, 404, "does not exist"),
        ("/api/messages", {"user": "alice", "id": "no-such", "log": HISTORY}, 404, "no-such"),
        ("/api/session", {"user": "alice"}, 400, "session_id"),
        ("/api/memories", {"user": "alice", "after": "m-nope"}, 400, "is not the id of a memory"),
        ("/api/memories", {"user": "alice", "limit": 501}, 400, "limit must be"),
        ("/api/memories", {"user": "alice", "id": "no-such"}, 404, "does not exist"),
        ("/api/memory_history", {"user": "alice"}, 400, "memory must be"),
    ],
)
def test_bad_requests_get_typed_errors(
    ui: UIServer, path: str, params: dict, status: int, said: str
) -> None:
    answer = get(ui, path, **params)
    assert answer.status_code == status, answer.text
    assert said in answer.json()["error"]["message"]


def test_tokens_guard_the_api_and_a_user_token_sees_one_user(store_url: str) -> None:
    args = ("--user-token", f"alice={ALICE}")
    data_dir = data_dir_for(store_url)
    with UIServer(store_url, token=ADMIN, args=args, data_dir=data_dir) as server:
        assert get(server, "/").status_code == 200  # the page holds no data
        refused = get(server, "/api/users")
        assert refused.status_code == 401 and "no token" in refused.json()["error"]["message"]
        assert get(server, "/api/users", token="wrong").status_code == 401
        assert get(server, "/api/users", token=ADMIN).json() == {"users": ["alice", "bob"]}
        assert get(server, "/api/me", token=ALICE).json()["user"] == "alice"
        assert get(server, "/api/users", token=ALICE).json() == {"users": ["alice"]}
        assert get(server, "/api/sessions", token=ALICE, user="alice").status_code == 200
        other = get(server, "/api/session", token=ALICE, user="bob", id="support")
        assert other.status_code == 403 and "only user 'alice'" in other.json()["error"]["message"]
        assert get(server, "/api/tree", token=ALICE, user="bob").status_code == 403
        for params in ({"user": "bob"}, {"user": "bob", "id": "support"}):
            other = get(server, "/api/memories", token=ALICE, **params)
            assert other.status_code == 403 and BOB_MEMORY not in other.text
        other = get(server, "/api/memory_history", token=ALICE, user="bob", memory="m1")
        assert other.status_code == 403
        mine = get(server, "/api/memories", token=ALICE, user="alice", limit=500).json()
        assert len(mine["memories"]) == 25 and BOB_MEMORY not in str(mine)
        assert mine["location"] is None  # the server's folders are the admin's to know
        admin = get(server, "/api/memories", token=ADMIN, user="alice").json()
        assert admin["location"].endswith("chroma")
        assert get(server, "/api/memories", user="alice").status_code == 401


def test_the_command_refuses_to_serve_beyond_loopback_without_a_token(store_url: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "praisonsession", "ui", "--store", store_url, "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path)},
    )
    assert done.returncode != 0
    assert "without a token" in done.stderr


def test_serve_has_the_browser_behind_its_tokens(store_url: str, tmp_path: Path) -> None:
    from praisonsession.apps.server.access_tokens import issue_token

    secret = "a-secret-of-the-ui-tests-" + "z" * 40
    secret_file = tmp_path / "server.secret"
    secret_file.write_text(secret + "\n")
    alice = issue_token(secret.encode(), "alice", 600)
    args = ("--secret-file", str(secret_file))
    data_dir = data_dir_for(store_url)
    with ServerWithMemories(store_url, token=ADMIN, args=args, data_dir=data_dir) as server:

        def ask(path: str, token: str, **params: str) -> Any:
            headers = {"Authorization": f"Bearer {token}"}
            return requests.get(server.base_url + path, params=params, headers=headers, timeout=30)

        assert ask("/ui/api/users", alice).json() == {"users": ["alice"]}
        assert ask("/ui/api/session", alice, user="alice", id="trip-planning").status_code == 200
        assert ask("/ui/api/session", alice, user="bob", id="support").status_code == 403
        assert ask("/ui/api/users", ADMIN).json() == {"users": ["alice", "bob"]}
        # memories, where the server's agents keep them, behind the same tokens
        notes = ask("/ui/api/memories", alice, user="alice", id="trip-planning").json()
        assert [m["text"] for m in notes["memories"]] == NOTES
        assert len(ask("/ui/api/memories", alice, user="alice").json()["memories"]) == 20
        assert ask("/ui/api/memories", alice, user="bob").status_code == 403
        bob = ask("/ui/api/memories", ADMIN, user="bob").json()["memories"]
        assert [m["text"] for m in bob] == [BOB_MEMORY]
        home = requests.get(server.base_url + "/ui", timeout=30)
        assert home.url.endswith("/ui/") and "<main" in home.text
        assert requests.get(server.base_url + "/ui/api/users", timeout=30).status_code == 401
        answer = requests.get(
            server.base_url + "/ui/api/session",
            params={"user": "alice", "id": "trip-planning"},
            headers={"Authorization": f"Bearer {ADMIN}"},
            timeout=30,
        )
        assert answer.json()["state"]["city"] == "Lisbon"


def test_no_view_reads_a_whole_history_and_usage_counts_as_show_does(store_url: str) -> None:
    from praisonsession.agents.usage import usage_totals
    from praisonsession.apps.ui.browse import SessionBrowser

    reads: list[tuple[str, str, int, int | None]] = []

    async def look() -> tuple[dict, dict, dict]:
        store = resolve_store(store_url, Settings())
        read = store.read_messages

        async def counted(session_id, user_id, log, start=0, stop=None):  # type: ignore[no-untyped-def]
            reads.append((session_id, log, start, stop))
            return await read(session_id, user_id, log, start, stop)

        store.read_messages = counted  # type: ignore[method-assign]
        try:
            browser = SessionBrowser(store)
            overview = await browser.session("alice", LONG)
            await browser.messages("alice", LONG, HISTORY, start=5000, limit=50)
            details = await browser.session("alice", "trip-planning")
            logs = {
                entry["log"]: await read("trip-planning", "alice", entry["log"])
                for entry in details["logs"]
            }
            return overview, details, logs
        finally:
            await store.close()

    overview, details, logs = asyncio.run(look())
    assert {"log": HISTORY, "messages": 10_000} in overview["logs"]
    assert [r for r in reads if r[0] == LONG] == [(LONG, HISTORY, 5000, 5050)]
    assert details["usage"] == usage_totals(logs)


def test_every_backend_serves_the_browser_views(store: SessionBase, tmp_path: Path) -> None:
    """The views call public store operations only, so each backend answers them alike."""
    from praisonsession.apps.ui.browse import SessionBrowser
    from praisonsession.apps.ui.memories import MemoryBrowser

    async def look() -> None:
        await seed_store(store, long_messages=120)
        settings = Settings(data_dir=tmp_path / "data")
        planning = AsyncSession("trip-planning", "alice", store=store, settings=settings)
        for note in NOTES:
            await planning.add_memory(note, "short", dedupe=False)
        notes = MemoryBrowser(store, settings)
        first = await notes.memories("alice", "trip-planning", limit=2)
        rest = await notes.memories("alice", "trip-planning", after=first["next"])
        assert [m["text"] for m in first["memories"] + rest["memories"]] == NOTES
        assert rest["next"] is None
        browser = SessionBrowser(store)
        assert await browser.users() == ["alice", "bob"]
        first = await browser.sessions("alice", limit=40)
        rest = await browser.sessions("alice", limit=40, after=first["next"])
        ids = [row["session_id"] for row in first["sessions"] + rest["sessions"]]
        assert len(ids) == 66 and ids == sorted(ids) and rest["next"] is None
        details = await browser.session("alice", "trip-planning")
        assert details["state"]["city"] == "Lisbon" and len(details["snapshots"]) == 1
        assert details["usage"]["session"]["total_tokens"] == 352 + 427 + 250
        page = await browser.messages("alice", LONG, HISTORY, start=100, limit=50)
        assert page["total"] == 120
        assert [m["content"] for m in page["messages"]] == [f"message {n}" for n in range(100, 120)]
        [root] = [n for n in await browser.tree("alice") if n["session_id"] == "trip-planning"]
        assert [c["session_id"] for c in root["children"]] == ["trip-lisbon-family", "trip-porto"]

    runtime.run(look())
