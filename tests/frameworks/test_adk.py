"""Google ADK's session and memory services on every praisonsession store.

``PraisonSessionService``: ADK's protocol as its own services keep it (ids stripped, a
duplicate refused, events equal and oldest first, exact float times, the tail and a time
window read, listing one user or all of an app), the ``app:``/``user:``/``temp:`` state
scopes, ids that never collide, a stale writer refused with nothing written, two processes
appending to one session, a real ``Runner`` with an offline model continued in another
process, the session seen as one of ours and ``erase_user`` reaching everything.
``PraisonMemoryService``: search, deletion by id, forgetting a session and a user. Every test
of the session service runs on memory, JSON, SQLite, Redis and PostgreSQL unless it needs
more than one process.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest
from adapter_packaging import assert_benchmark_prints, assert_not_imported
from google.adk.errors._stale_session_error import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.memory.base_memory_service import BaseMemoryService
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions.base_session_service import BaseSessionService, GetSessionConfig
from google.adk.sessions.session import Session as AdkSession
from google.genai import types

import praisonsession
from adk_workers import make_runner, worker_command
from backends import ENCRYPTION_KEY, store_url
from praisonsession import (
    InMemorySession,
    InvalidIdError,
    InvalidValueError,
    Session,
    StoreUnavailableError,
)
from praisonsession.integrations import adk
from praisonsession.integrations.adk import (
    EVENTS_LOG,
    MAX_APP_NAME,
    SESSION_DOC,
    PraisonMemoryService,
    PraisonSessionService,
    session_record_id,
)
from praisonsession.stores import record_key
from praisonsession.stores.backends import memory as memory_backend
from praisonsession.stores.backends.json.backend import JSONBackend
from praisonsession.stores.backends.sqlite.backend import SqliteBackend
from praisonsession.stores.guard import beneath
from released_together import run_together

T = TypeVar("T")


def run(work: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(work)


def said(text: str, author: str = "user", **fields: Any) -> Event:
    role = "user" if author == "user" else "model"
    content = types.Content(role=role, parts=[types.Part(text=text)])
    return Event(invocation_id="inv", author=author, content=content, **fields)


def delta(**state: Any) -> EventActions:
    return EventActions(state_delta=state)


# -- ADK's protocol ----------------------------------------------------------------------------


def test_it_is_adks_service_and_takes_a_store_as_session_does(store: Any) -> None:
    service = PraisonSessionService(store)
    assert isinstance(service, BaseSessionService)
    assert "PraisonSessionService(store=" in repr(service)
    run(service.close())
    default = PraisonSessionService()  # no store: Session's default, SQLite under the cwd
    assert ".praisonsession" in default.store.url and default.store.url.startswith("sqlite:")
    run(default.close())


def test_sessions_are_made_read_listed_and_deleted(store: Any) -> None:
    async def work() -> None:
        service = PraisonSessionService(store)
        before = time.time()
        made = await service.create_session(app_name="shop", user_id="ada", state={"cart": [1]})
        after = time.time()
        assert len(made.id) == 36 and made.state == {"cart": [1]} and made.events == []
        assert before <= made.last_update_time <= after  # made now
        assert await service.get_session(app_name="shop", user_id="ada", session_id=made.id) == made
        padded = await service.create_session(app_name="shop", user_id="ada", session_id=" s1 \n")
        assert padded.id == "s1"
        with pytest.raises(AlreadyExistsError):
            await service.create_session(app_name="shop", user_id="ada", session_id="s1")
        got = await service.get_session(app_name="shop", user_id="ada", session_id="  s1")
        assert got is not None and got.id == "s1"
        assert await service.get_session(app_name="shop", user_id="bob", session_id="s1") is None
        assert await service.get_session(app_name="shoe", user_id="ada", session_id="s1") is None
        listed = await service.list_sessions(app_name="shop", user_id="ada")
        assert sorted(s.id for s in listed.sessions) == sorted([made.id, "s1"])
        assert all(s.events == [] for s in listed.sessions)
        await service.delete_session(app_name="shop", user_id="ada", session_id=" s1 ")
        assert await service.get_session(app_name="shop", user_id="ada", session_id="s1") is None
        await service.delete_session(app_name="shop", user_id="ada", session_id="s1")  # again
        listed = await service.list_sessions(app_name="shop", user_id="ada")
        assert [s.id for s in listed.sessions] == [made.id]
        with pytest.raises(SessionNotFoundError):
            await service.append_event(padded, said("too late"))
        await service.close()

    run(work())


def test_code_written_for_the_in_memory_services_sync_calls_runs_unchanged(store: Any) -> None:
    service = PraisonSessionService(store)
    made = service.create_session_sync(app_name="shop", user_id="ada", state={"cart": [1]})
    padded = service.create_session_sync(app_name="shop", user_id="ada", session_id=" s1 ")
    assert padded.id == "s1" and made.state == {"cart": [1]}
    with pytest.raises(AlreadyExistsError):
        service.create_session_sync(app_name="shop", user_id="ada", session_id="s1")
    run(service.append_event(made, said("hello")))
    got = service.get_session_sync(app_name="shop", user_id="ada", session_id=made.id)
    assert got is not None and [e.content for e in got.events] == [said("hello").content]
    recent = GetSessionConfig(num_recent_events=0)
    none = service.get_session_sync(
        app_name="shop", user_id="ada", session_id=made.id, config=recent
    )
    assert none is not None and none.events == []
    listed = service.list_sessions_sync(app_name="shop", user_id="ada")
    assert sorted(s.id for s in listed.sessions) == sorted([made.id, "s1"])
    service.delete_session_sync(app_name="shop", user_id="ada", session_id=" s1 ")
    service.delete_session_sync(app_name="shop", user_id="ada", session_id="s1")  # again: no-op
    everyone = service.list_sessions_sync(app_name="shop")
    assert [s.id for s in everyone.sessions] == [made.id]

    async def in_a_notebook() -> AdkSession | None:  # a running loop: the calls go elsewhere
        return service.get_session_sync(app_name="shop", user_id="ada", session_id=made.id)

    seen = run(in_a_notebook())
    assert seen is not None and seen.id == made.id and len(seen.events) == 1
    run(service.close())


def test_events_come_back_equal_oldest_first_with_exact_times(store: Any) -> None:
    rich = Event(
        invocation_id="inv-1",
        author="helper",
        content=types.Content(
            role="model",
            parts=[
                types.Part(text='こんにちは 😊 "quoted" \'; DROP TABLE x;--'),
                types.Part.from_bytes(data=b"\x00\x01image", mime_type="image/png"),
                types.Part(function_call=types.FunctionCall(name="f", args={"a": [1, 2.5]})),
            ],
        ),
        actions=EventActions(state_delta={"k": {"deep": [None, True]}}, transfer_to_agent="x"),
        long_running_tool_ids={"t1"},
        custom_metadata={"n": 0.1 + 0.2},
        timestamp=1700000000.1234567,
    )

    async def work() -> None:
        service = PraisonSessionService(store)
        session = await service.create_session(app_name="shop", user_id="ada", session_id="s")
        events = [rich, *(said(f"turn {i}", timestamp=1700000001.0 + i / 3) for i in range(5))]
        for event in events:
            await service.append_event(session, event)
        got = await service.get_session(app_name="shop", user_id="ada", session_id="s")
        assert got is not None
        assert got.events == events and got == session
        assert got.last_update_time == events[-1].timestamp  # the last event's, exactly
        assert got.state == {"k": {"deep": [None, True]}}
        listed = (await service.list_sessions(app_name="shop", user_id="ada")).sessions
        assert listed[0].last_update_time == events[-1].timestamp
        await service.close()

    run(work())


def test_the_latest_events_and_a_time_window_are_read_from_the_end(store: Any) -> None:
    async def work() -> None:
        service = PraisonSessionService(store)
        session = await service.create_session(app_name="shop", user_id="ada", session_id="s")
        for i in range(300):
            await service.append_event(session, said(f"e{i}", timestamp=float(i)))

        async def texts(**config: Any) -> list[str]:
            got = await service.get_session(
                app_name="shop", user_id="ada", session_id="s", config=GetSessionConfig(**config)
            )
            assert got is not None
            return [e.content.parts[0].text for e in got.events]

        every = [f"e{i}" for i in range(300)]
        assert await texts() == every
        assert await texts(num_recent_events=0) == []
        assert await texts(num_recent_events=20) == every[-20:]
        assert await texts(num_recent_events=1000) == every
        assert await texts(after_timestamp=250.0) == every[250:]
        assert await texts(after_timestamp=3.0) == every[3:]
        assert await texts(after_timestamp=400.0) == []
        assert await texts(after_timestamp=250.0, num_recent_events=20) == every[-20:]
        assert await texts(after_timestamp=290.0, num_recent_events=20) == every[290:]
        with pytest.raises(ValueError):
            GetSessionConfig(num_recent_events=-1)
        await service.close()

    run(work())


def test_listing_pages_through_every_user_of_an_app(
    store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(adk, "_PAGE", 3)  # pages of three: the walk must go on past them

    async def work() -> None:
        service = PraisonSessionService(store)
        for user in ("amy", "bob", "cy"):
            for n in range(4):
                await service.create_session(
                    app_name="shop", user_id=user, session_id=f"s{n}", state={"n": n}
                )
        await service.create_session(app_name="shops", user_id="amy", session_id="other")
        await service.create_session(app_name="sho", user_id="amy", session_id="p:other")
        mine = (await service.list_sessions(app_name="shop", user_id="amy")).sessions
        assert sorted(s.id for s in mine) == ["s0", "s1", "s2", "s3"]
        assert {s.id: s.state for s in mine} == {f"s{n}": {"n": n} for n in range(4)}
        everyone = (await service.list_sessions(app_name="shop")).sessions
        assert sorted((s.user_id, s.id) for s in everyone) == [
            (user, f"s{n}") for user in ("amy", "bob", "cy") for n in range(4)
        ]
        times = [s.last_update_time for s in everyone]
        assert times == sorted(times)  # oldest first, as ADK lists them
        assert (await service.list_sessions(app_name="nobody")).sessions == []
        assert (await service.list_sessions(app_name="shop", user_id="dan")).sessions == []
        await service.close()

    run(work())


def test_listed_sessions_are_as_adk_would_make_them(store: Any) -> None:
    """A listing makes each ADK Session as pydantic's model_copy would, without validation:
    it holds only while ADK's Session has these fields and private attributes. Each listed
    session equals one made by Session(...) in every field, private attribute and dump, and
    owns its state, its events list and its marker (the fields set, complete, is shared)."""
    assert set(AdkSession.model_fields) == {
        "id", "app_name", "user_id", "state", "events", "last_update_time"
    }  # fmt: skip
    assert set(AdkSession.__private_attributes__) == {"_storage_update_marker"}

    async def work() -> None:
        service = PraisonSessionService(store)
        await service.create_session(
            app_name="shop", user_id="amy", session_id="a", state={"n": 1, "user:tier": "gold"}
        )
        await service.create_session(
            app_name="shop", user_id="bob", session_id="b", state={"n": 2, "app:x": [1]}
        )
        for listing in (
            await service.list_sessions(app_name="shop"),
            await service.list_sessions(app_name="shop", user_id="amy"),
        ):
            for listed in listing.sessions:
                made = AdkSession(
                    app_name="shop",
                    user_id=listed.user_id,
                    id=listed.id,
                    state=dict(listed.state),
                    events=[],  # as ADK's own services list them
                    last_update_time=listed.last_update_time,
                )
                assert listed == made
                assert (
                    listed.model_fields_set == made.model_fields_set == set(AdkSession.model_fields)
                )
                assert listed.__pydantic_private__ == made.__pydantic_private__
                assert listed.__pydantic_extra__ == made.__pydantic_extra__
                assert listed.model_dump_json() == made.model_dump_json()
                assert type(listed.last_update_time) is float
                assert listed.events == [] and listed.app_name == "shop"
        first, second = (await service.list_sessions(app_name="shop")).sessions
        assert first.state == {"n": 1, "user:tier": "gold", "app:x": [1]}
        assert second.state == {"n": 2, "app:x": [1]}
        assert first.events is not second.events and first.state is not second.state
        first.events.append(said("held by the first only"))
        first.state["n"] = 9
        first.last_update_time = 5.0
        first._storage_update_marker = "mine"
        assert second._storage_update_marker is None and second.last_update_time != 5.0
        assert second.model_fields_set == set(AdkSession.model_fields)
        again = (await service.list_sessions(app_name="shop")).sessions
        assert [s.events for s in again] == [[], []] and again[0].state["n"] == 1
        await service.close()

    run(work())


def test_a_listing_without_its_copy_reads_the_sessions_document(store: Any) -> None:
    """A record whose listing copy is missing or damaged (a creation cut short, a hand edit)
    is listed from the session's document: its state and time, never a crash."""

    async def work() -> None:
        service = PraisonSessionService(store)
        damaged: list[Any] = [None, "x", {"state": {}}, {"state": [], "time": 1.0, "events": 0}]
        damaged.append({"state": {}, "time": "soon", "events": 0})
        held = []
        for n, copy in enumerate(damaged):
            session = await service.create_session(
                app_name="shop", user_id=f"u{n % 2}", session_id=f"s{n}", state={"n": n}
            )
            await service.append_event(session, said(f"turn {n}", actions=delta(turn=n)))
            held.append(session)
            key = record_key(session_record_id("shop", f"s{n}"), f"u{n % 2}")
            await service.store.backend.merge_record_metadata(key, metadata={SESSION_DOC: copy})
        for listing in (
            await service.list_sessions(app_name="shop"),
            await service.list_sessions(app_name="shop", user_id="u0"),
        ):
            for listed in listing.sessions:
                n = int(listed.id[1:])
                assert listed.state == {"n": n, "turn": n}
                assert listed.last_update_time == held[n].last_update_time
        everyone = (await service.list_sessions(app_name="shop")).sessions
        assert [s.id for s in everyone] == [f"s{n}" for n in range(len(damaged))]
        await service.close()

    run(work())


def test_an_app_and_a_session_id_never_collide(store: Any) -> None:
    assert session_record_id("a", "1:x") != session_record_id("a:1", "x")
    assert session_record_id("", "x") != session_record_id("x", "")

    async def work() -> None:
        service = PraisonSessionService(store)
        first = await service.create_session(app_name="a", user_id="u", session_id="1:x")
        second = await service.create_session(app_name="a:1", user_id="u", session_id="x")
        await service.append_event(first, said("in app a", actions=delta(**{"app:k": "a"})))
        got = await service.get_session(app_name="a:1", user_id="u", session_id="x")
        assert got is not None and got.events == [] and got.state == {}
        assert second.state == {}
        assert [s.id for s in (await service.list_sessions(app_name="a")).sessions] == ["1:x"]
        with pytest.raises(InvalidIdError):
            await service.create_session(app_name="a", user_id="u", session_id="x" * 300)
        with pytest.raises(InvalidIdError):
            await service.create_session(app_name="a", user_id="u", session_id="bad\x00id")
        await service.close()

    run(work())


# -- state scopes ------------------------------------------------------------------------------


def test_app_user_and_temp_state_live_where_adk_says(store: Any) -> None:
    async def work() -> None:
        service = PraisonSessionService(store)
        ada = await service.create_session(
            app_name="shop",
            user_id="ada",
            session_id="a1",
            state={"app:open": True, "user:name": "Ada", "temp:t": 1, "own": "a1"},
        )
        assert ada.state == {"app:open": True, "user:name": "Ada", "own": "a1"}
        event = said("hi", actions=delta(**{"app:visits": 1, "user:tz": "UTC", "temp:x": 2}))
        await service.append_event(ada, event)
        assert ada.state["temp:x"] == 2  # for the rest of this invocation
        assert "temp:x" not in event.actions.state_delta  # never stored
        again = await service.create_session(app_name="shop", user_id="ada", session_id="a2")
        assert again.state == {
            "app:open": True,
            "app:visits": 1,
            "user:name": "Ada",
            "user:tz": "UTC",
        }
        bob = await service.create_session(app_name="shop", user_id="bob", session_id="b1")
        assert bob.state == {"app:open": True, "app:visits": 1}
        other_app = await service.create_session(app_name="blog", user_id="ada", session_id="x")
        assert other_app.state == {}
        await service.append_event(bob, said("hey", actions=delta(**{"app:visits": 2})))
        got = await service.get_session(app_name="shop", user_id="ada", session_id="a1")
        assert got is not None and got.state == {
            "app:open": True,
            "app:visits": 2,
            "user:name": "Ada",
            "user:tz": "UTC",
            "own": "a1",
        }
        assert got.events[0].actions.state_delta == {"app:visits": 1, "user:tz": "UTC"}
        assert await service.get_user_state(app_name="shop", user_id="ada") == {
            "name": "Ada",
            "tz": "UTC",
        }
        assert await service.get_user_state(app_name="shop", user_id="cy") == {}
        listed = (await service.list_sessions(app_name="shop")).sessions
        assert {s.user_id: s.state.get("user:name") for s in listed} == {"ada": "Ada", "bob": None}
        stored = json.dumps(
            await service.store.read_messages(session_record_id("shop", "a1"), "ada", EVENTS_LOG)
        )
        assert '"temp:' not in stored
        await service.close()

    run(work())


def test_the_state_a_caller_is_handed_is_its_own_copy(store: Any) -> None:
    """Changing what get_user_state or get_session returned, nested values too, changes nothing
    stored: the next read and a later session of the user see what was stored (as ADK's
    in-memory service does by default, on every store)."""

    async def work() -> None:
        service = PraisonSessionService(store)
        state = {"user:profile": {"name": "Alice"}, "own": {"n": 1}}
        await service.create_session(app_name="shop", user_id="u", session_id="s1", state=state)
        handed = await service.get_user_state(app_name="shop", user_id="u")
        handed["profile"]["name"] = "Mallory"
        handed["added"] = 1
        session = await service.get_session(app_name="shop", user_id="u", session_id="s1")
        assert session is not None
        session.state["own"]["n"] = 2
        session.state["user:profile"]["name"] = "Eve"
        assert await service.get_user_state(app_name="shop", user_id="u") == {
            "profile": {"name": "Alice"}
        }
        again = await service.get_session(app_name="shop", user_id="u", session_id="s1")
        assert again is not None and again.state == state
        later = await service.create_session(app_name="shop", user_id="u", session_id="s2")
        assert later.state == {"user:profile": {"name": "Alice"}}

    run(work())


def test_partial_events_are_not_stored(store: Any) -> None:
    async def work() -> None:
        service = PraisonSessionService(store)
        session = await service.create_session(app_name="shop", user_id="ada", session_id="s")
        partial = said("stream", partial=True, actions=delta(k=1))
        assert await service.append_event(session, partial) is partial
        got = await service.get_session(app_name="shop", user_id="ada", session_id="s")
        assert got is not None and got.events == [] and got.state == {}
        await service.close()

    run(work())


# -- concurrency -------------------------------------------------------------------------------


def test_a_value_no_store_holds_refuses_create_session_before_anything_is_written(
    store: Any,
) -> None:
    """A NaN (or infinity, or an integer too long) anywhere in ``state`` is InvalidValueError,
    raised before the session or an app:/user: record exists: a retry succeeds."""
    bad_states = [
        {"score": float("nan")},
        {"app:theme": float("inf")},
        {"user:rank": {"deep": [1, float("nan")]}},
        {"ok": 1, "user:big": 10**5000},
    ]

    async def work() -> None:
        service = PraisonSessionService(store)
        for state in bad_states:
            with pytest.raises(InvalidValueError, match="state"):
                await service.create_session(
                    app_name="shop", user_id="u", session_id="s", state=state
                )
            assert await service.get_session(app_name="shop", user_id="u", session_id="s") is None
            assert await service.get_user_state(app_name="shop", user_id="u") == {}
            other = await service.create_session(app_name="shop", user_id="v")
            assert other.state == {}  # no app: value was written
            await service.delete_session(app_name="shop", user_id="v", session_id=other.id)
        with pytest.raises(InvalidValueError, match="state must be a dict"):
            await service.create_session(app_name="shop", user_id="u", state=[1])  # type: ignore[arg-type]
        made = await service.create_session(
            app_name="shop", user_id="u", session_id="s", state={"score": 1, "app:theme": "dark"}
        )
        assert made.state == {"score": 1, "app:theme": "dark"}
        await service.close()

    run(work())


def test_an_event_no_store_holds_changes_nothing_and_leaves_the_session_usable(
    store: Any,
) -> None:
    """A NaN under an app:/user: key or a plain one: no event, no session key, no app or user
    record is written; the caller's session goes on appending."""

    async def work() -> None:
        service = PraisonSessionService(store)
        session = await service.create_session(
            app_name="shop", user_id="u", state={"n": 1, "app:a": 1, "user:b": 1}
        )
        for bad in (
            {"n": 2, "app:a": float("nan")},
            {"user:b": float("-inf"), "n": 3},
            {"n": float("nan")},
        ):
            with pytest.raises(InvalidValueError, match="state_delta"):
                await service.append_event(
                    session, said("bad", actions=EventActions(state_delta=bad))
                )
            assert session.events == [] and session.state == {"n": 1, "app:a": 1, "user:b": 1}
        with pytest.raises(InvalidValueError, match="an ADK Event; got Session and dict"):
            await service.append_event(session, {"author": "user"})  # type: ignore[arg-type]
        with pytest.raises(InvalidValueError, match="got NoneType and Event"):
            await service.append_event(None, said("lost"))  # type: ignore[arg-type]
        with pytest.raises(InvalidValueError, match="GetSessionConfig"):
            await service.get_session(
                app_name="shop",
                user_id="u",
                session_id=session.id,
                config={"num_recent_events": 1},  # type: ignore[arg-type]
            )
        stored = await service.get_session(app_name="shop", user_id="u", session_id=session.id)
        assert stored is not None and stored.events == []
        assert stored.state == {"n": 1, "app:a": 1, "user:b": 1}
        await service.append_event(session, said("good", actions=delta(n=5, **{"app:a": 2})))
        stored = await service.get_session(app_name="shop", user_id="u", session_id=session.id)
        assert stored is not None and len(stored.events) == 1
        assert stored.state == {"n": 5, "app:a": 2, "user:b": 1}
        await service.close()

    run(work())


def test_an_event_appended_twice_is_kept_once_as_adks_in_memory_service_keeps_it(
    store: Any,
) -> None:
    from google.adk.sessions import InMemorySessionService

    async def work() -> None:
        for service in (PraisonSessionService(store), InMemorySessionService()):
            session = await service.create_session(app_name="shop", user_id="u", state={"count": 0})
            event = said("once", actions=delta(count=1, **{"user:seen": 1}))
            await service.append_event(session, event)
            await service.append_event(session, event)  # a retried delivery
            again = await service.get_session(app_name="shop", user_id="u", session_id=session.id)
            assert again is not None
            await service.append_event(again, event.model_copy(deep=True))  # an equal copy
            final = await service.get_session(app_name="shop", user_id="u", session_id=session.id)
            assert final is not None
            assert [e.id for e in final.events] == [event.id], type(service).__name__
            assert final.state == {"count": 1, "user:seen": 1}
            assert len(session.events) == 1
            await service.append_event(final, said("next"))  # the session goes on
            if isinstance(service, PraisonSessionService):
                await service.close()

    run(work())


def test_an_empty_user_id_is_never_the_default_user(store: Any) -> None:
    """ADK keeps user "" apart from every other user; our ids cannot hold "" (it is the default
    user there), so it is refused with a typed error and never reads another user's data."""

    async def work() -> None:
        service = PraisonSessionService(store)
        mine = await service.create_session(
            app_name="shop", user_id="default_user", state={"user:secret": "x"}
        )
        calls = [
            service.create_session(app_name="shop", user_id=""),
            service.get_session(app_name="shop", user_id="", session_id=mine.id),
            service.list_sessions(app_name="shop", user_id=""),
            service.delete_session(app_name="shop", user_id="", session_id=mine.id),
            service.get_user_state(app_name="shop", user_id=""),
        ]
        for call in calls:
            with pytest.raises(InvalidIdError, match="user_id must not be empty"):
                await call
        assert await service.get_session(
            app_name="shop", user_id="default_user", session_id=mine.id
        )
        await service.close()

    run(work())


def test_a_long_app_name_is_named_in_its_own_error(store: Any) -> None:
    async def work() -> None:
        service = PraisonSessionService(store)
        with pytest.raises(
            InvalidIdError, match=f"app_name is 220 characters long; the limit is {MAX_APP_NAME}"
        ):
            await service.create_session(app_name="a" * 220, user_id="u")
        longest = await service.create_session(app_name="a" * MAX_APP_NAME, user_id="u")
        assert len(longest.id) == 36  # ADK's generated id fits beside the longest app name
        with pytest.raises(
            InvalidIdError,
            match="session_id is 60 characters long; with an app_name of 200 characters "
            "the limit is 47",
        ):
            await service.create_session(
                app_name="a" * MAX_APP_NAME, user_id="u", session_id="s" * 60
            )
        await service.close()

    run(work())


class DiskFailed(Exception):
    """A failure injected in the middle of a write."""


def _fail(*args: Any, **kwargs: Any) -> Any:
    raise DiskFailed("injected: the write failed after the session's record was made")


#: What writes a new session's logs, after its record and document, in each backend's step.
_LOG_WRITERS = {
    "memory": (memory_backend, "_write"),
    "json": (JSONBackend, "_write_log"),
    "sqlite": (SqliteBackend, "_write_log"),
}


def _cut_short(kind: str, backend: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Make the next creation fail after its record is written; what it then raises."""
    if kind != "postgres":
        monkeypatch.setattr(*_LOG_WRITERS[kind], _fail)
        return DiskFailed
    # PostgreSQL's one statement: its module documents' insert divides by zero as it runs
    statement = backend._sql["CREATE_WITH_MODULES"]
    broken = statement.replace("m.n, m.d FROM", "m.n, m.d || 1 / (length(m.n) - length(m.n)) FROM")
    assert broken != statement
    monkeypatch.setattr(backend, "_sql", {**backend._sql, "CREATE_WITH_MODULES": broken})
    return StoreUnavailableError


@pytest.mark.parametrize("kind", [*_LOG_WRITERS, "postgres"], indirect=True)
def test_a_creation_cut_short_leaves_no_session(
    kind: str, store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``create_session`` is one atomic step (one commit on SQLite, one statement on
    PostgreSQL): a failure while it writes, after the session's record, leaves no session,
    no listing entry and no user: state, and the id free. Its record used to be committed
    first, alone, so the failure left a session without its state. (Redis makes it in one
    script, which no failure can cut short once it runs.)"""

    async def work() -> None:
        service = PraisonSessionService(store)
        state = {"cart": [1], "user:plan": "pro"}
        with pytest.raises(_cut_short(kind, beneath(service.store.backend), monkeypatch)):
            await service.create_session(
                app_name="shop", user_id="ada", session_id="s", state=state
            )
        monkeypatch.undo()
        assert await service.get_session(app_name="shop", user_id="ada", session_id="s") is None
        assert (await service.list_sessions(app_name="shop", user_id="ada")).sessions == []
        assert (await service.list_sessions(app_name="shop")).sessions == []
        assert await service.get_user_state(app_name="shop", user_id="ada") == {}
        made = await service.create_session(
            app_name="shop", user_id="ada", session_id="s", state=state
        )
        assert made.state == state and made.events == []
        assert await service.get_session(app_name="shop", user_id="ada", session_id="s") == made
        await service.close()

    run(work())


def test_a_stale_session_is_refused_and_nothing_is_written(store: Any) -> None:
    async def work() -> None:
        service = PraisonSessionService(store)
        first = await service.create_session(app_name="shop", user_id="ada", session_id="s")
        second = await service.get_session(app_name="shop", user_id="ada", session_id="s")
        assert second is not None
        await service.append_event(first, said("one", actions=delta(k="first")))
        with pytest.raises(StaleSessionError, match="modified in storage"):
            await service.append_event(second, said("two", actions=delta(k="second")))
        fresh = await service.get_session(app_name="shop", user_id="ada", session_id="s")
        assert fresh is not None and [e.content.parts[0].text for e in fresh.events] == ["one"]
        assert fresh.state == {"k": "first"}
        await service.append_event(fresh, said("two", actions=delta(k="second")))
        # a session made by hand carries no mark: its last event tells whether it is current
        by_hand = fresh.model_copy(deep=True)
        by_hand._storage_update_marker = None
        await service.append_event(by_hand, said("three"))
        with pytest.raises(StaleSessionError):
            await service.append_event(fresh, said("four"))
        tasks = [
            service.append_event(by_hand.model_copy(deep=True), said(f"r{n}")) for n in range(4)
        ]
        results = await asyncio.gather(*tasks, return_exceptions=True)
        assert sum(not isinstance(r, Exception) for r in results) == 1
        final = await service.get_session(app_name="shop", user_id="ada", session_id="s")
        assert final is not None and len(final.events) == 4
        # the losers' listing copies, written beside their refused appends, were set back
        listed = await service.list_sessions(app_name="shop", user_id="ada")
        assert [(s.state, s.last_update_time) for s in listed.sessions] == [
            (final.state, final.last_update_time)
        ]
        await service.close()

    run(work())


@pytest.mark.slow
def test_two_processes_appending_to_one_session_never_interleave_a_history(
    url: str, tmp_path: Path
) -> None:
    """Each event is appended only onto the history its writer read: a writer that lost the
    race is refused as stale, reloads and appends again, so the log holds every event once,
    each writer's in its order, and the session's state is the last one's of each."""
    service = PraisonSessionService(url)
    run(service.create_session(app_name="shop", user_id="u", session_id="shared"))
    refused = run_together(worker_command, "append", url, tmp_path, 2, "60")
    got = run(service.get_session(app_name="shop", user_id="u", session_id="shared"))
    assert got is not None
    ids = [e.invocation_id for e in got.events]
    assert len(ids) == 120
    for name in ("w0", "w1"):
        assert [i for i in ids if i.startswith(name)] == [f"{name}-{i}" for i in range(60)]
    assert got.state == {"w0": 59, "w1": 59}
    with Session(session_record_id("shop", "shared"), "u", store=url) as ours:
        assert ours.message_count(EVENTS_LOG) == 120
    assert all(isinstance(n, int) for n in refused)
    run(service.close())


# -- a real Runner, one of our sessions --------------------------------------------------------


@pytest.mark.slow
def test_a_runner_with_an_offline_model_keeps_state_scopes_in_another_process(
    url: str, tmp_path: Path
) -> None:
    def turn(session_id: str, message: str) -> dict[str, Any]:
        done = subprocess.run(
            worker_command("runner-turn", url, session_id, message),
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stderr
        seen: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        return seen

    empty = {"app:notes": None, "user:last_note": None, "temp:draft": None, "notes_here": None}
    assert turn("trip", "Buy tea") == empty
    assert turn("trip", "Buy milk") == {  # a new process: temp: is gone, the rest is kept
        "app:notes": 1,
        "user:last_note": "Buy tea",
        "temp:draft": None,
        "notes_here": 1,
    }
    assert turn("other", "Call Bob") == {  # another session: app: and user: follow
        "app:notes": 2,
        "user:last_note": "Buy milk",
        "temp:draft": None,
        "notes_here": None,
    }
    service = PraisonSessionService(url)
    got = run(service.get_session(app_name="shop", user_id="ada", session_id="trip"))
    assert got is not None
    assert got.state == {"app:notes": 3, "user:last_note": "Call Bob", "notes_here": 2}
    texts = [p.text for e in got.events for p in (e.content.parts if e.content else []) if p.text]
    assert texts == ["Buy tea", "Noted: Buy tea", "Buy milk", "Noted: Buy milk"]
    assert len(got.events) == 8  # per turn: the message, the call, the answer, the reply
    run(service.close())


def test_a_runner_in_this_process_on_every_store(store: Any) -> None:
    async def work() -> None:
        service = PraisonSessionService(store)
        runner = make_runner(service)
        await service.create_session(app_name="shop", user_id="ada", session_id="s")
        message = types.Content(role="user", parts=[types.Part(text="Hello")])
        replies = [
            e.content.parts[0].text
            async for e in runner.run_async(user_id="ada", session_id="s", new_message=message)
            if e.content and e.content.parts[0].text
        ]
        assert replies == ["Noted: Hello"]
        got = await service.get_session(app_name="shop", user_id="ada", session_id="s")
        assert got is not None and got.state["notes_here"] == 1 and len(got.events) == 4
        await service.close()

    run(work())


def test_the_session_is_one_of_ours_until_erase_user_removes_everything(url: str) -> None:
    async def work() -> None:
        service = PraisonSessionService(url)
        session = await service.create_session(
            app_name="shop", user_id="ada", session_id="s", state={"user:card": "4111", "app:v": 1}
        )
        await service.append_event(session, said("my secret order"))
        await service.create_session(app_name="shop", user_id="bob", session_id="s")
        await service.close()

    run(work())
    with Session(session_record_id("shop", "s"), "ada", store=url) as ours:
        assert ours.list_logs() == {EVENTS_LOG: 1}
        assert ours.read_messages(EVENTS_LOG)[0]["content"]["parts"][0]["text"] == "my secret order"
        listed = sorted(s.session_id for s in ours.list_sessions())
        assert listed == sorted([session_record_id("shop", "s"), "adk-user:4:shop"])
    report = praisonsession.erase_user("ada", store=url)
    assert report.sessions == 2  # the session and the user's state

    async def after() -> None:
        service = PraisonSessionService(url)
        assert await service.get_session(app_name="shop", user_id="ada", session_id="s") is None
        assert await service.get_user_state(app_name="shop", user_id="ada") == {}
        assert [s.user_id for s in (await service.list_sessions(app_name="shop")).sessions] == [
            "bob"
        ]
        bob = await service.get_session(app_name="shop", user_id="bob", session_id="s")
        assert bob is not None and bob.state == {"app:v": 1}  # the app's state is the app's
        await service.close()

    run(after())


def test_events_are_sealed_at_rest_with_an_encryption_key(tmp_path: Path) -> None:
    url = store_url("sqlite", tmp_path)
    secret = "my card number is 4111 1111 1111 1111"

    async def work() -> None:
        service = PraisonSessionService(url, settings={"encryption_key": ENCRYPTION_KEY})
        session = await service.create_session(app_name="shop", user_id="ada", session_id="s")
        await service.append_event(session, said(secret, actions=delta(note=secret)))
        got = await service.get_session(app_name="shop", user_id="ada", session_id="s")
        assert got is not None and got.events[0].content.parts[0].text == secret
        await service.close()

    run(work())
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert files and not any(secret.encode() in p.read_bytes() for p in files)


# -- memory ------------------------------------------------------------------------------------


@pytest.mark.parametrize("memory_kind", ["memory", "sqlite"])
def test_memory_is_searched_deleted_and_forgotten(memory_kind: str, tmp_path: Path) -> None:
    store: Any = InMemorySession() if memory_kind == "memory" else store_url("sqlite", tmp_path)

    async def work() -> None:
        sessions = PraisonSessionService(store)
        memory = PraisonMemoryService(sessions.store)
        assert isinstance(memory, BaseMemoryService)
        trip = await sessions.create_session(app_name="shop", user_id="ada", session_id="trip")
        for text in ("My cat is called Miso.", "I drink green tea every morning."):
            await sessions.append_event(trip, said(text))
        await sessions.append_event(trip, Event(invocation_id="i", author="user"))  # no text
        with pytest.raises(InvalidValueError, match="takes an ADK Session, got dict"):
            await memory.add_session_to_memory({"id": "trip"})  # type: ignore[arg-type]
        with pytest.raises(InvalidValueError, match="one is a str"):  # and none was added
            await memory.add_events_to_memory(
                app_name="shop",
                user_id="ada",
                events=[said("I live in Oslo."), "Oslo"],  # type: ignore[list-item]
            )
        with pytest.raises(InvalidValueError, match="list of MemoryEntry, got None"):
            await memory.add_memory(app_name="shop", user_id="ada", memories=None)  # type: ignore[arg-type]
        await memory.add_session_to_memory(trip)
        await memory.add_session_to_memory(trip)  # again: nothing doubled
        await memory.add_events_to_memory(
            app_name="shop",
            user_id="ada",
            session_id="chat",
            events=[said("I live in Lisbon.")],
            custom_metadata={"source": "import", "skipped": {"not": "a scalar"}},
        )
        await memory.add_memory(
            app_name="blog",
            user_id="ada",
            memories=[
                MemoryEntry(content=types.Content(parts=[types.Part(text="My cat is black.")]))
            ],
        )

        async def search(query: str, user: str = "ada", app: str = "shop") -> list[MemoryEntry]:
            found = await memory.search_memory(app_name=app, user_id=user, query=query)
            return list(found.memories)

        hits = await search("what is my pet's name")
        assert len(hits) == 3  # this app's only, each memory once
        assert hits[0].content == trip.events[0].content and hits[0].author == "user"
        assert hits[0].timestamp is not None and hits[0].timestamp.startswith("20")
        lisbon = next(h for h in hits if "Lisbon" in h.content.parts[0].text)
        assert lisbon.custom_metadata == {"source": "import"}
        assert await search("cat", user="bob") == []
        assert [h.content.parts[0].text for h in await search("cat", app="blog")] == [
            "My cat is black."
        ]

        miso = hits[0].id
        assert miso is not None
        await memory.delete_memory(app_name="blog", user_id="ada", memory_id=miso)  # not blog's
        assert miso in [h.id for h in await search("cat")]
        await memory.delete_memory(app_name="shop", user_id="ada", memory_id=miso)
        assert miso not in [h.id for h in await search("cat")]
        await memory.add_session_to_memory(trip)  # a deleted memory never comes back
        assert all("Miso" not in h.content.parts[0].text for h in await search("cat"))
        history = await memory.memory_history(app_name="shop", user_id="ada", memory_id=miso)
        assert [change["event"] for change in history] == ["ADD", "DELETE"]

        assert await memory.forget_session(app_name="shop", user_id="ada", session_id="trip") == 1
        assert [h.content.parts[0].text for h in await search("tea")] == ["I live in Lisbon."]
        assert await memory.forget_user(app_name="shop", user_id="ada") == 1
        assert await search("Lisbon") == []
        assert len(await search("cat", app="blog")) == 1
        await memory.close()
        await sessions.close()

    run(work())
    if memory_kind == "sqlite":
        report = praisonsession.erase_user("ada", store=store)
        assert report.vector_entries >= 1

        async def gone() -> None:
            memory = PraisonMemoryService(store)
            found = await memory.search_memory(app_name="blog", user_id="ada", query="cat")
            assert found.memories == []
            await memory.close()

        run(gone())


# -- packaging ---------------------------------------------------------------------------------


def test_importing_praisonsession_never_imports_adk() -> None:
    assert_not_imported("any(m.startswith('google.adk') for m in sys.modules)", "ADK was imported")


@pytest.mark.slow
def test_the_benchmark_runs_quickly_and_prints_every_row(tmp_path: Path) -> None:
    rows = [
        "| append_event |",
        "| append_event, app: and user: state |",
        "| create_session, with state |",
        "| delete_session @100 events |",
        "| get_session(num_recent_events=20) @100 events |",
        "| get_session(num_recent_events=20) @1,000 events |",
        "| get_session(num_recent_events=10) @1,000 events |",
        "| get_session(after_timestamp, last 10) @1,000 events |",
        "| list_sessions, one user (20) @200 |",
        "| list_sessions, every user @200 |",
        "PraisonSessionService: WAL, synchronous=FULL (durability 'power')",
        "SqliteSessionService: WAL, synchronous=FULL",
        "get_session flat",
    ]
    assert_benchmark_prints("bench_adk.py", rows, tmp_path, timeout=600)
