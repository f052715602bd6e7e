"""The synchronous Session: PraisonAI's API, with state that is actually kept."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from backends import SERVERS, STORE_BACKENDS, make_store, store_url
from llm_server import ScriptedChatServer
from praisonsession import (
    InMemorySession,
    InvalidIdError,
    InvalidValueError,
    MessageLog,
    Session,
    SessionExpiredError,
    SessionNotFoundError,
    StateModule,
)
from praisonsession.settings import Settings


@pytest.fixture(params=STORE_BACKENDS)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param in SERVERS:
        request.getfixturevalue(SERVERS[request.param])  # starts the test session's server
        return store_url(request.param, tmp_path)
    return {
        "memory": "memory://",
        "json": f"json://{tmp_path}/json-store",
        "sqlite": f"sqlite://{tmp_path}/sessions.db",
    }[request.param]


def test_defaults_match_praisonai_with_a_full_entropy_id() -> None:
    with Session() as session:
        assert re.fullmatch(r"[0-9a-f]{32}", session.session_id)
        assert session.user_id == "default_user"
        assert session.timeout == 30 and session.session_ttl is None
    assert Session().session_id != Session().session_id


def test_the_timeout_comes_from_the_settings_unless_given(
    monkeypatch: pytest.MonkeyPatch, server: ScriptedChatServer
) -> None:
    assert Session(store="memory://", settings={"timeout": 5}).timeout == 5
    monkeypatch.setenv("PRAISONSESSION_TIMEOUT", "7.5")
    session = Session(store="memory://")
    assert session.timeout == 7.5
    assert Session(store="memory://", timeout=2).timeout == 2  # the argument wins
    agent = session.Agent("Tutor", llm={"model": "m", "base_url": server.url})
    assert agent.llm.timeout == 7.5  # the agent's requests are bounded by the session's
    from praisonsession.apps.server.app import create_app

    agents = {"/agent": ("Tutor", lambda session: session.Agent("Tutor"))}
    assert create_app(InMemorySession(), agents).hosting.timeout == 7.5  # praisonsession serve
    assert create_app(InMemorySession(), agents, timeout=3).hosting.timeout == 3


def test_the_default_store_is_sqlite_under_the_data_directory(tmp_path: Path) -> None:
    with Session("chat_123", "user_456") as session:
        session.set_state("k", "v")
        assert session.store.url == f"sqlite://{tmp_path / '.praisonsession' / 'sessions.db'}"
    assert (tmp_path / ".praisonsession" / "sessions.db").is_file()


def test_settings_come_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PRAISONSESSION_DATA_DIR", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("PRAISONSESSION_DEFAULT_TTL", "120")
    with Session("s") as session:
        assert str(tmp_path / "elsewhere" / "sessions.db") in session.store.url
        assert 119 < session.time_to_expiry() <= 120


def test_settings_can_be_passed_as_an_object_or_a_dict(tmp_path: Path) -> None:
    url = f"json://{tmp_path}/j"
    assert Session("s", settings=Settings(store_url=url)).store.url == f"json://{tmp_path}/j"
    assert Session("s", settings={"store_url": "memory://"}).store.url == "memory://"


def test_praisonai_state_bugs_do_not_happen_here(url: str) -> None:
    session = Session("chat_123", "user_456", store=url)
    session.set_state("score", 10)
    assert session.increment_state("score", increment=5) == 15
    assert session.get_state("score") == 15
    for _ in range(300):
        session.increment_state("hits")
    assert session.get_state("hits") == 300
    session.set_state("nested", {"a": [1, 2]})
    assert session.get_state("nested") == {"a": [1, 2]}
    for reserved in ("type", "session_id", "user_id"):
        session.set_state(reserved, "just a key")
    assert session.restore_state() == {
        "score": 15,
        "hits": 300,
        "nested": {"a": [1, 2]},
        "type": "just a key",
        "session_id": "just a key",
        "user_id": "just a key",
    }


def test_save_state_merges_and_state_can_be_deleted(url: str) -> None:
    session = Session("s", store=url)
    session.save_state({"a": 1, "b": 2})
    session.save_state({"b": 3, "c": 4})
    assert session.restore_state() == {"a": 1, "b": 3, "c": 4}
    session.delete_state("a", "missing")
    assert session.restore_state() == {"b": 3, "c": 4}
    assert session.get_state("a", "gone") == "gone"
    session.clear_state()
    assert session.restore_state() == {}


def test_restore_state_returns_a_copy(url: str) -> None:
    session = Session("s", store=url)
    session.set_state("items", [1])
    session.restore_state()["items"].append(2)
    assert session.get_state("items") == [1]


def test_bad_values_are_refused_and_the_state_is_unchanged(url: str) -> None:
    session = Session("s", store=url)
    session.set_state("kept", 1)
    with pytest.raises(InvalidValueError, match="not JSON data"):
        session.set_state("when", object())
    with pytest.raises(InvalidValueError, match="list"):
        session.save_state({"ok": 1, "pair": (1, 2)})
    with pytest.raises(InvalidValueError):
        session.save_state(["not", "a", "dict"])
    with pytest.raises(InvalidValueError):
        session.increment_state("kept", increment="1")
    assert session.restore_state() == {"kept": 1}


def test_state_survives_a_new_process(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path}/s.db"
    Session("chat", "ada", store=url).save_state({"score": 15, "nested": {"x": [1]}})
    code = (
        "from praisonsession import Session;"
        f"s = Session('chat', 'ada', store={url!r});"
        "print(s.increment_state('score'), s.get_state('nested'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "16 {'x': [1]}"


def test_invalid_constructor_arguments_are_refused(url: str) -> None:
    with pytest.raises(InvalidIdError):
        Session("", store=url)
    with pytest.raises(InvalidIdError):
        Session("s", "bad\x00user", store=url)
    with pytest.raises(ValueError, match="non-negative"):
        Session("s", store=url, session_ttl=-5)
    with pytest.raises(InvalidValueError):
        Session("s", store=url, timeout=0)
    with pytest.raises(InvalidValueError):
        Session("s", store=42)
    with pytest.raises(InvalidValueError):
        Session("s", store=url, memory_config="not a dict")
    with pytest.raises(InvalidValueError, match="agent_url"):
        Session("s", agent_url="ftp://localhost:8000/agent")


def test_ttl_is_persisted_and_read_by_other_session_objects(url: str) -> None:
    first = Session("s", store=url, session_ttl=100)
    same_store = first.store if url == "memory://" else url
    second = Session("s", store=same_store)  # no TTL given: keeps the stored one
    assert 99 < second.time_to_expiry() <= 100
    assert second.is_expired() is False
    assert Session("other", store=same_store).time_to_expiry() is None


def test_an_expired_session_refuses_work_and_a_new_one_starts_afresh(
    url: str, frozen_clock
) -> None:
    session = Session("s", store=url, session_ttl=0.3)
    session.set_state("a", 1)
    frozen_clock.advance(0.45)
    assert session.is_expired() is True
    assert session.time_to_expiry() == 0.0
    with pytest.raises(SessionExpiredError, match="Session"):
        session.get_state("a")
    with pytest.raises(SessionExpiredError):
        session.set_state("a", 2)
    again = Session("s", store=session.store, session_ttl=10)
    assert again.restore_state() == {}
    again.set_state("b", 2)
    assert again.restore_state() == {"b": 2}


def test_activity_through_the_facade_slides_the_ttl(url: str, frozen_clock) -> None:
    session = Session("s", store=url, session_ttl=0.6)
    for _ in range(4):
        frozen_clock.advance(0.25)
        session.increment_state("n")
    assert session.is_expired() is False
    assert session.get_state("n") == 4


def test_touch_expire_and_delete(url: str) -> None:
    session = Session("s", store=url, session_ttl=5)
    session.touch(ttl=None)
    assert session.time_to_expiry() is None
    session.expire()
    assert session.is_expired() is True
    session = Session("s", store=session.store)
    session.set_state("x", 1)
    assert session.delete() is True
    with pytest.raises(SessionNotFoundError, match="deleted"):
        session.get_state("x")


def test_listing_and_deleting_a_users_sessions(url: str) -> None:
    store = make_store("memory", Path(".")) if url == "memory://" else url
    for name in ("b", "a", "c"):
        Session(name, "ada", store=store)
    Session("z", "bob", store=store)
    ada = Session("a", "ada", store=store)
    assert [info.session_id for info in ada.list_sessions()] == ["a", "b", "c"]
    assert [info.session_id for info in ada.list_sessions(limit=2, after="a")] == ["b", "c"]
    assert ada.delete_session("b") is True
    assert ada.delete_session("z") is False  # bob's session is not ada's to delete
    assert [info.session_id for info in ada.list_sessions()] == ["a", "c"]


def test_user_modules_are_saved_with_the_session(url: str) -> None:
    class Notebook(StateModule):
        def __init__(self) -> None:
            super().__init__()
            self.log = MessageLog()
            self.title = "untitled"
            self.register_state("title")

    book = Notebook()
    book.title = "ideas"
    book.log.append({"role": "user", "content": "first"})
    session = Session("s", store=url)
    session.save_modules(book=book)
    fresh = Notebook()
    Session("s", store=session.store).load_modules(book=fresh, never_saved=Notebook())
    assert fresh.title == "ideas"
    assert list(fresh.log) == [{"role": "user", "content": "first"}]


def test_works_inside_a_running_event_loop_like_a_jupyter_cell(url: str) -> None:
    async def cell() -> int:
        session = Session("s", store=url)  # sync calls while a loop runs on this thread
        session.set_state("n", 1)
        return session.increment_state("n")

    assert asyncio.run(cell()) == 2


def test_threads_sharing_one_session_lose_no_increment(url: str) -> None:
    session = Session("s", store=url)
    count = 50 if url.startswith("json") else 200

    def worker() -> None:
        for _ in range(count):
            session.increment_state("n")

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert session.get_state("n") == 4 * count


def test_repr_and_notebook_rendering(url: str) -> None:
    session = Session("chat_123", "user_456", store=url, session_ttl=60)
    session.set_state("score", 15)
    assert repr(session) == (
        f"Session(id='chat_123', user='user_456', store={session.store.url!r})"
    )
    page = session._repr_html_()
    assert "chat_123" in page and "user_456" in page and "score=15" in page
    assert "in 60 s" in page or "in 59 s" in page
    assert "<script" not in Session("<script>", store=session.store)._repr_html_()


def test_close_is_idempotent_and_the_context_manager_closes() -> None:
    with Session("s", store="memory://") as session:
        session.set_state("a", 1)
    session.close()
    assert session.get_state("a") == 1  # closing releases connections; data stays


def test_a_store_instance_is_shared_not_owned() -> None:
    store = InMemorySession()
    Session("s", store=store).set_state("a", 1)
    with Session("s", store=store) as session:
        assert session.get_state("a") == 1
