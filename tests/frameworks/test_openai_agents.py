"""The OpenAI Agents SDK's sessions on every praisonsession store (``PraisonSession``).

What the SDK's protocol promises (latest N in order, pop on empty is None, clear, settings
checked as the SDK checks them, one instance on several threads each with its own loop, a
method replaced on an instance, the raw tail as ``SQLiteSession`` returns it, ``ping`` as
its network sessions answer it), what we
promise beyond it when asked (``orphan_free``: a tool output never stored or returned without
its call; items equal to what was added), a real ``Runner`` continued in
another process, the conversation seen and erased as one of our sessions, many processes at
once (adds, pops, SIGKILL) and encryption at rest. Every test runs on memory, JSON, SQLite,
Redis and PostgreSQL unless it needs more than one process.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import subprocess
import threading
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest
from adapter_packaging import assert_benchmark_prints, assert_not_imported
from agents import Agent, Runner, set_tracing_disabled
from agents.memory import Session as SessionProtocol
from agents.memory import SessionABC, SessionSettings
from agents.testing import ScriptedModel, assistant_message, function_call

import praisonsession
from backends import ENCRYPTION_KEY, store_url
from openai_agents_workers import turn_items, worker_command
from praisonsession import (
    InMemorySession,
    InvalidIdError,
    InvalidValueError,
    KeyRequiredError,
    Session,
    open_store,
)
from praisonsession.integrations.openai_agents import LOG_NAME, PraisonSession, SessionClosedError
from praisonsession.stores import record_key
from praisonsession.stores.guard import beneath
from released_together import run_together

T = TypeVar("T")

set_tracing_disabled(True)  # offline: the SDK would try to export traces to OpenAI


def run(work: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(work)


def say(text: str, role: str = "user") -> dict[str, Any]:
    return {"role": role, "content": text}


def call(call_id: str) -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": "lookup", "arguments": "{}"}


def output(call_id: str, text: str = "found") -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": text}


# -- the SDK's protocol ----------------------------------------------------------------------


def test_it_is_the_sdks_session_and_takes_a_store_as_session_does(store: Any) -> None:
    session = PraisonSession("chat", store=store)
    assert isinstance(session, SessionABC)
    assert isinstance(session, SessionProtocol)
    assert session.session_id == "chat" and session.user_id == "default_user"
    assert isinstance(session.session_settings, SessionSettings)
    assert session.session_settings.limit is None
    assert "chat" in repr(session)
    session.close()
    default = PraisonSession("chat")  # no store: Session's default, SQLite under the cwd
    assert ".praisonsession" in default.store.url and default.store.url.startswith("sqlite:")
    default.close()


def test_items_come_back_equal_and_in_order(store: Any) -> None:
    items = [
        say("こんにちは 😊 Привет \u00e9\u0301 \u200b"),
        {"role": "assistant", "content": [{"type": "output_text", "text": "x", "annotations": []}]},
        call("c1"),
        output("c1", "large " * 200_000),  # a 1.2 MB tool output
        {
            "type": "message",
            "role": "assistant",
            "content": [{"nested": {"deep": [1, 2.5, None, True, {"k": "'; DROP TABLE x;--"}]}}],
        },
        say('O\'Reilly "quoted" \\ backslash \n newline'),
    ]

    async def work() -> None:
        session = PraisonSession("chat", store=store)
        await session.add_items(items[:3])
        await session.add_items(items[3:])
        assert await session.get_items() == items
        assert await session.get_items(limit=2) == items[-2:]
        again = PraisonSession("chat", store=store)
        assert await again.get_items() == items
        session.close()
        again.close()

    run(work())


def test_limit_is_the_latest_n_oldest_first(store: Any) -> None:
    items = [say(f"message {i}") for i in range(6)]

    async def work() -> None:
        session = PraisonSession("chat", store=store)
        await session.add_items(items)
        assert await session.get_items(limit=2) == items[-2:]
        assert await session.get_items(limit=4) == items[-4:]
        assert await session.get_items(limit=10) == items
        assert await session.get_items(limit=0) == []
        assert await session.get_items(limit=-1) == items  # the SDK's SQLiteSession: all
        with pytest.raises(InvalidValueError, match="limit"):
            await session.get_items(limit="3")  # type: ignore[arg-type]
        limited = PraisonSession("chat", store=store, session_settings=SessionSettings(limit=3))
        assert await limited.get_items() == items[-3:]
        assert await limited.get_items(limit=1) == items[-1:]  # an explicit limit wins
        session.close()
        limited.close()

    run(work())


def test_pop_takes_the_last_item_and_none_when_empty(store: Any) -> None:
    async def work() -> None:
        session = PraisonSession("chat", store=store)
        assert await session.pop_item() is None
        await session.add_items([say("a"), say("b"), say("c")])
        assert await session.pop_item() == say("c")
        assert await session.get_items() == [say("a"), say("b")]
        other = PraisonSession("other", store=store)
        await other.add_items([say("kept")])
        assert await session.pop_item() == say("b")
        assert await session.pop_item() == say("a")
        assert await session.pop_item() is None
        assert await session.get_items() == []
        assert await other.get_items() == [say("kept")]
        await session.add_items([say("after")])  # the sequence goes on after pops
        assert await session.get_items() == [say("after")]
        session.close()
        other.close()

    run(work())


def test_a_pop_after_another_writers_change_takes_the_last_item_stored(store: Any) -> None:
    """A pop first expects the length its session last saw; another session's pops, adds
    and clears in between make it count again, never pop a wrong or vanished item."""

    async def work() -> None:
        mine = PraisonSession("chat", user_id="bob", store=store)
        theirs = PraisonSession("chat", user_id="bob", store=store)
        await mine.add_items([say("a"), say("b"), say("c")])
        assert await theirs.pop_item() == say("c")  # shorter than mine saw
        assert await mine.pop_item() == say("b")
        assert await theirs.pop_item() == say("a")
        await theirs.add_items([say("x"), say("y")])  # as long as mine saw, other items
        assert await mine.pop_item() == say("y")
        await theirs.add_items([say("z"), say("w")])  # longer
        assert await mine.pop_item() == say("w")
        await theirs.clear_session()
        assert await mine.pop_item() is None
        await mine.add_items([say("p")])
        assert await theirs.store.delete_session("chat", "bob")  # the session itself gone
        assert await mine.pop_item() is None
        assert await theirs.get_items() == []
        assert await theirs.store.get_info("chat", "bob") is None  # no pop made it again
        mine.close()
        theirs.close()

    run(work())


def test_clear_empties_the_log_and_keeps_the_session(store: Any) -> None:
    async def work() -> None:
        session = PraisonSession("chat", user_id="bob", store=store)
        await session.clear_session()  # nothing stored: nothing made
        assert await session.store.get_info("chat", "bob") is None
        await session.add_items([say("a"), say("b")])
        await session.store.set_metadata("chat", "bob", topic="tea")
        await session.clear_session()
        assert await session.get_items() == []
        info = await session.store.get_info("chat", "bob")
        assert info is not None and info.metadata["topic"] == "tea"
        await session.add_items([say("again")])
        assert await session.get_items() == [say("again")]
        session.close()

    run(work())


def test_settings_are_checked_as_the_sdk_checks_them(store: Any) -> None:
    with pytest.raises(TypeError, match="Unknown session settings: limitt"):
        PraisonSession("chat", store=store, session_settings={"limitt": 1})
    with pytest.raises(InvalidValueError, match="SessionSettings or a dict"):
        PraisonSession("chat", store=store, session_settings=5)  # type: ignore[arg-type]
    made = PraisonSession("chat", store=store, session_settings={"limit": 0})
    assert isinstance(made.session_settings, SessionSettings)
    assert made.session_settings.limit == 0
    assert made.session_settings.resolve({"limit": 4}).limit == 4
    with pytest.raises(InvalidIdError, match="session_id"):
        PraisonSession(None, store=store)  # type: ignore[arg-type]
    with pytest.raises(InvalidIdError):
        PraisonSession("", store=store)
    with pytest.raises(InvalidValueError, match="store"):
        PraisonSession("chat", store=42)  # type: ignore[arg-type]
    with pytest.raises(InvalidValueError, match="add_items takes a list"):
        run(made.add_items("hello"))  # type: ignore[arg-type]
    with pytest.raises(InvalidValueError, match=r"message 1\[.content.\]"):
        run(made.add_items([say("ok"), {"content": object()}]))
    assert run(made.get_items(limit=None)) == []  # limit 0 from the settings
    made.close()


def test_one_instance_serves_threads_each_running_its_own_loop(kind: str, store: Any) -> None:
    """Six threads, each call on a loop of its own, on one instance. The embedded stores
    take the SDK's own pattern (a loop made, used once and closed); the network stores keep
    a connection pool per loop, which a loop must shut down: asyncio.run does."""
    session = PraisonSession("chat", store=store)
    errors: list[BaseException] = []

    def on_a_new_loop(work: Coroutine[Any, Any, Any]) -> None:
        if kind in ("redis", "postgres"):
            asyncio.run(work)
            return
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(work)
        finally:
            loop.close()

    def writer(name: str) -> None:
        try:
            for i in range(15):
                on_a_new_loop(session.add_items([say(f"{name}-{i}")]))
                on_a_new_loop(session.get_items(limit=3))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(f"t{n}",)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    stored = [item["content"] for item in run(session.get_items())]
    assert len(stored) == 6 * 15
    for n in range(6):
        assert [c for c in stored if c.startswith(f"t{n}-")] == [f"t{n}-{i}" for i in range(15)]
    session.close()


def test_a_method_replaced_on_an_instance_is_the_one_the_runner_calls(store: Any) -> None:
    session = PraisonSession("chat", store=store)

    async def failing_add_items(items: list[dict[str, Any]]) -> None:
        raise RuntimeError("replaced add_items")

    session.add_items = failing_add_items  # type: ignore[method-assign]
    agent = Agent(name="Assistant", model=ScriptedModel([[assistant_message("hi")]]))
    with pytest.raises(RuntimeError, match="replaced add_items"):
        run(Runner.run(agent, "hello", session=session))
    assert run(session.get_items()) == []
    session.close()


def test_a_closed_session_refuses_everything_and_the_items_stay(store: Any) -> None:
    session = PraisonSession("chat", store=store)
    run(session.add_items([say("kept")]))
    session.close()
    session.close()  # twice is fine
    for operation in (
        session.add_items([]),
        session.get_items(),
        session.pop_item(),
        session.clear_session(),
        session.ping(),
    ):
        with pytest.raises(SessionClosedError, match="PraisonSession is closed"):
            run(operation)
    assert issubclass(SessionClosedError, RuntimeError)
    again = PraisonSession("chat", store=store)
    assert run(again.get_items()) == [say("kept")]

    async def closed_on_its_loop() -> None:  # close() from async code, as the SDK's tests do
        await again.get_items()
        again.close()
        await asyncio.sleep(0)  # the store closes as the loop runs on

    run(closed_on_its_loop())


@pytest.mark.parametrize("turns", [0, 1])  # of the loop, between close() and its end
def test_a_close_as_its_loop_ends_still_releases_the_store(
    turns: int, kind: str, store: Any, request: pytest.FixtureRequest
) -> None:
    """close() from async code right before asyncio.run ends its loop (the SDK's own tests end
    so): the store is closed all the same and aclose() on a later loop returns. The loop's end
    cancelled the close on its way: a Redis connection stayed open, and aclose() raised that
    close's CancelledError."""
    ours: Any = None
    if kind == "redis":
        import redis

        watch = redis.Redis.from_url(request.getfixturevalue("redis_url"))
        first = watch.client_id()  # the server numbers clients in order: later ones are ours

        def ours() -> list[dict[str, Any]]:
            return [client for client in watch.client_list() if int(client["id"]) > first]

    session = PraisonSession("chat", store=store)

    async def last_turn() -> None:
        await session.add_items([say("kept")])
        session.close()  # then asyncio.run cancels what is left, the close if still going
        for _ in range(turns):
            await asyncio.sleep(0)

    run(last_turn())
    if ours is not None:  # closed by close() alone
        deadline = time.monotonic() + 30  # the server reads the close when it next polls
        while ours() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ours() == []
        watch.close()
    run(session.aclose())
    again = PraisonSession("chat", store=store)
    assert run(again.get_items()) == [say("kept")]
    again.close()


def test_a_cancelled_add_is_applied_before_the_cancellation_is_raised(store: Any) -> None:
    async def work() -> None:
        session = PraisonSession("chat", store=store)
        task = asyncio.ensure_future(session.add_items([say("once")]))
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await session.get_items() == [say("once")]
        session.close()

    run(work())


def test_a_cancelled_pop_is_applied_once_before_the_cancellation_is_raised(store: Any) -> None:
    """The caller's cancel (twice over) waits for the pop's end, then is raised as the
    caller's own: the item is gone, exactly one, and the task counts both requests."""

    async def work() -> tuple[list[Any], int]:
        session = PraisonSession("chat", store=store)
        await session.add_items([say("one"), say("two"), say("three")])
        task = asyncio.ensure_future(session.pop_item())
        await asyncio.sleep(0)
        task.cancel()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        left = await session.get_items()
        session.close()
        return left, task.cancelling()

    assert run(work()) == ([say("one"), say("two")], 2)


def test_ping_is_true_while_the_store_answers_and_writes_nothing(store: Any) -> None:
    """The readiness check of the SDK's network sessions (``RedisSession.ping``): True on
    every store; it only reads, so a conversation pinged before its first item is not made."""

    async def work() -> tuple[bool, Any, bool, list[Any]]:
        session = PraisonSession("pinged", user_id="bob", store=store)
        answered = await session.ping()
        made = await session.store.get_info("pinged", "bob")
        await session.add_items([say("hello")])
        again = await session.ping()
        items = await session.get_items()
        await session.aclose()
        return answered, made, again, items

    assert run(work()) == (True, None, True, [say("hello")])


def test_ping_is_false_while_the_redis_server_is_down_and_true_once_it_is_back() -> None:
    """A server that is gone is False, not an error (within the store's retry bound); the
    same session answers True again once a server is back on its port."""
    from redis_server import RedisServer

    with RedisServer() as server:
        url = f"{server.url}?socket_timeout=0.3&socket_connect_timeout=0.3&retry_max_delay=0.2"

        async def work() -> tuple[bool, bool, bool]:
            session = PraisonSession("chat", store=url)
            await session.add_items([say("one")])
            before = await session.ping()
            server.kill()
            try:
                down = await session.ping()
            finally:
                server.start()
            back = await session.ping()
            await session.aclose()
            return before, down, back

        assert run(work()) == (True, False, True)


async def pop_on_a_hung_server(session: PraisonSession, server: Any) -> str:
    """How a pop ends while the Redis server is stopped (SIGSTOP): "StoreUnavailableError"
    when a bound ended it. With no bound it would wait for the server, which a safety timer
    resumes after 10 s, and end "popped": the test then fails rather than hangs."""
    from praisonsession import StoreUnavailableError

    server.proc.send_signal(signal.SIGSTOP)
    safety = threading.Timer(10, server.proc.send_signal, (signal.SIGCONT,))
    safety.start()
    try:
        await session.pop_item()
        return "popped"
    except StoreUnavailableError:
        return "StoreUnavailableError"
    finally:
        safety.cancel()
        server.proc.send_signal(signal.SIGCONT)


@pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="needs POSIX SIGSTOP")
def test_a_pop_on_a_hung_redis_ends_within_the_stores_bound() -> None:
    """A write runs in a task that refuses its caller's cancel; the store's bound on each
    attempt still ends it (it cancels as asyncio does), so a pop on a server that accepts
    connections and never answers raises StoreUnavailableError after the retry bound."""
    from redis_server import RedisServer

    with RedisServer() as server:
        url = f"{server.url}?socket_timeout=0.3&retry_max_delay=0.2"

        async def work() -> tuple[str, list[Any]]:
            session = PraisonSession("chat", store=url)
            await session.add_items([say("one"), say("two")])
            ended = await pop_on_a_hung_server(session, server)
            left = await session.get_items()
            await session.aclose()
            return ended, left

        ended, left = run(work())
        assert ended == "StoreUnavailableError"
        assert left in ([say("one")], [say("one"), say("two")])  # applied or not: never twice


@pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="needs POSIX SIGSTOP")
def test_a_pop_through_a_given_client_ends_at_that_clients_socket_timeout() -> None:
    """A client passed in keeps redis-py's own socket_timeout, an asyncio timeout inside the
    write's task: the task refuses only its caller's cancel, so that timeout still ends a pop
    on a server that never answers."""
    import redis.asyncio

    from praisonsession import RedisSession
    from redis_server import RedisServer

    with RedisServer() as server:

        async def work() -> str:
            client = redis.asyncio.Redis.from_url(server.url, socket_timeout=0.3)
            store = RedisSession(client=client, key_prefix="given:", retry_max_delay=0.2)
            session = PraisonSession("chat", store=store)
            await session.add_items([say("one"), say("two")])
            ended = await pop_on_a_hung_server(session, server)
            await store.close()
            await client.aclose()
            return ended

        assert run(work()) == "StoreUnavailableError"


# -- the SDK's window, and integrity beyond the SDK when asked ------------------------------


def test_get_items_is_the_raw_tail_as_the_sdk_stores_it(store: Any, tmp_path: Path) -> None:
    """The SDK's contract: the last N items as stored, an output whose call fell out of the
    window included (the SDK's Runner drops it); what ``SQLiteSession`` returns, item for item."""
    from agents import SQLiteSession

    history = [say("weather?"), call("c1"), output("c1"), say("sunny", "assistant")]
    lone = [output("ghost"), say("after")]

    async def work() -> None:
        ours = PraisonSession("chat", store=store)
        theirs = SQLiteSession("chat", tmp_path / "sdk.db")
        for session in (ours, theirs):
            await session.add_items(history)
            await session.add_items(lone)
        for limit in (None, 1, 2, 3, 5, 6, 10):
            assert await ours.get_items(limit) == await theirs.get_items(limit), limit
        assert await ours.get_items(limit=4) == [output("c1"), say("sunny", "assistant"), *lone]
        ours.close()
        theirs.close()

    run(work())


def test_an_empty_user_id_is_never_the_default_user(store: Any) -> None:
    """The SDK keeps no users; ours take "" for the default user, so "" is refused rather than
    reading, popping or clearing the default user's conversation."""

    async def work() -> None:
        owner = PraisonSession("chat", user_id="default_user", store=store)
        await owner.add_items([say("mine")])
        with pytest.raises(InvalidIdError, match="user_id must not be empty"):
            PraisonSession("chat", user_id="", store=store)
        assert await owner.get_items() == [say("mine")]
        unnamed = PraisonSession("chat", user_id=None, store=store)  # as Session: the default
        assert unnamed.user_id == "default_user" and await unnamed.get_items() == [say("mine")]
        await unnamed.aclose()
        await owner.aclose()
        with pytest.raises(SessionClosedError):
            await owner.get_items()

    run(work())


def test_orphan_free_is_a_flag(store: Any) -> None:
    with pytest.raises(InvalidValueError, match="orphan_free must be True or False"):
        PraisonSession("chat", store=store, orphan_free="yes")  # type: ignore[arg-type]


def test_a_tool_output_is_never_stored_without_its_call(
    store: Any, caplog: pytest.LogCaptureFixture
) -> None:
    async def work() -> None:
        session = PraisonSession("chat", store=store, orphan_free=True)
        await session.add_items([say("q"), call("c1")])
        far = [say(f"filler {i}") for i in range(300)]  # the call is 300 items back
        await session.add_items(far)
        with caplog.at_level(logging.WARNING, logger="praisonsession"):
            await session.add_items([output("c1"), output("lost"), say("answer")])
        assert "call_id lost" in caplog.text
        stored = await session.get_items()
        assert stored[-2:] == [output("c1"), say("answer")]
        assert output("lost") not in stored
        await session.add_items([output("c2"), call("c2")])  # an output before its call
        assert (await session.get_items())[-1] == call("c2")
        await session.add_items([output("nothing")])  # only orphans: nothing written
        assert (await session.get_items())[-1] == call("c2")
        session.close()

    run(work())


def test_get_items_never_starts_with_an_orphaned_output(store: Any) -> None:
    history = [say("weather?"), call("c1"), output("c1"), {"role": "assistant", "content": "sunny"}]
    parallel = [say("two"), call("a"), call("b"), output("a"), output("b"), say("done")]

    async def work() -> None:
        session = PraisonSession("chat", store=store, orphan_free=True)
        await session.add_items(history)
        assert await session.get_items(limit=2) == history[-1:]  # the output is left out
        assert await session.get_items(limit=3) == history[-3:]
        assert await session.get_items() == history
        other = PraisonSession("parallel", store=store, orphan_free=True)
        await other.add_items(parallel)
        # the window [b, out a, out b, done]: out a's call is before it
        assert await other.get_items(limit=4) == [call("b"), output("b"), say("done")]
        session.close()
        other.close()

    run(work())


def test_an_orphan_written_around_the_adapter_is_never_returned(store: Any) -> None:
    async def work() -> None:
        session = PraisonSession("chat", user_id="u", store=store, orphan_free=True)
        raw = session.store
        await raw.append_messages("chat", "u", LOG_NAME, [say("q"), output("ghost"), say("a")])
        assert await session.get_items() == [say("q"), say("a")]
        plain = PraisonSession("chat", user_id="u", store=store)  # the SDK's raw tail
        assert await plain.get_items() == [say("q"), output("ghost"), say("a")]
        plain.close()
        session.close()

    run(work())


def test_a_call_popped_while_an_output_is_added_takes_the_output_with_it(store: Any) -> None:
    """The output is appended only onto the log the call was found in: a pop between the two
    makes the append conflict, and the next look finds no call."""

    async def work() -> None:
        session = PraisonSession("chat", store=store, orphan_free=True)
        popper = PraisonSession("chat", store=store)
        await session.add_items([say("q"), call("c1")])
        looked = session._stored_calls

        async def look_then_pop(needed: set[tuple[str, str]], held: int) -> Any:
            found = await looked(needed, held)
            if found:
                assert await popper.pop_item() == call("c1")
            return found

        session._stored_calls = look_then_pop  # type: ignore[method-assign]
        await session.add_items([output("c1"), say("answer")])
        assert await session.get_items() == [say("q"), say("answer")]
        session.close()
        popper.close()

    run(work())


# -- a real Runner, one of our sessions ------------------------------------------------------


@pytest.fixture
def weather_agent() -> tuple[Agent[Any], ScriptedModel]:
    from agents import function_tool

    @function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"Sunny in {city}"

    model = ScriptedModel(
        [
            [function_call("get_weather", {"city": "Paris"}, call_id="call_1")],
            [assistant_message("It is sunny in Paris.")],
            [assistant_message("You asked about Paris.")],
        ]
    )
    return Agent(name="Assistant", model=model, tools=[get_weather]), model


def test_a_runner_turn_is_one_of_our_sessions_until_erased(
    store: Any, weather_agent: tuple[Agent[Any], ScriptedModel]
) -> None:
    agent, model = weather_agent
    session = PraisonSession("trip", user_id="alice", store=store)
    assert run(Runner.run(agent, "Weather in Paris?", session=session)).final_output == (
        "It is sunny in Paris."
    )
    second = run(Runner.run(agent, "What did I ask?", session=session))
    assert second.final_output == "You asked about Paris."
    seen = model.calls[-1].input
    assert seen[0] == say("Weather in Paris?")
    assert [item.get("type") for item in seen[1:3]] == ["function_call", "function_call_output"]
    stored = run(session.get_items())
    assert len(stored) == 6

    with Session("trip", "alice", store=store) as ours:
        assert ours.list_logs() == {LOG_NAME: 6}
        assert [s.session_id for s in ours.list_sessions()] == ["trip"]
        assert ours.read_messages(LOG_NAME) == stored
    praisonsession.erase_user("alice", store=store)
    assert run(session.get_items()) == []
    session.close()


def test_show_names_the_conversation_log(url: str) -> None:
    from click.testing import CliRunner

    from praisonsession.apps.cli import main

    session = PraisonSession("chat", user_id="bob", store=url)
    run(session.add_items([say("hello from the SDK"), call("c1"), output("c1")]))
    session.close()
    shown = CliRunner().invoke(main, ["show", "chat", "--user", "bob", "--store", url])
    assert shown.exit_code == 0, shown.output
    assert LOG_NAME in shown.output and "hello from the SDK" in shown.output


@pytest.mark.slow
def test_a_conversation_goes_on_in_another_process(url: str, tmp_path: Path) -> None:
    def turn(message: str, reply: str) -> list[dict[str, Any]]:
        done = subprocess.run(
            worker_command("runner-turn", url, "chat", message, reply),
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stderr
        received: list[dict[str, Any]] = json.loads(done.stdout.strip().splitlines()[-1])
        return received

    assert turn("My name is Ada.", "Hello Ada.") == [say("My name is Ada.")]
    seen = turn("What is my name?", "Ada.")
    assert seen[0] == say("My name is Ada.")
    assert seen[1]["role"] == "assistant" and seen[-1] == say("What is my name?")
    session = PraisonSession("chat", user_id="u", store=url)
    assert len(run(session.get_items())) == 4
    session.close()


# -- many processes --------------------------------------------------------------------------


@pytest.mark.slow
def test_eight_processes_adding_keep_every_item_and_each_writers_order(
    url: str, tmp_path: Path
) -> None:
    run_together(worker_command, "add", url, tmp_path, 8, "200")
    session = PraisonSession("shared", user_id="u", store=url)
    stored = [item["content"] for item in run(session.get_items())]
    session.close()
    assert len(stored) == 8 * 200
    for n in range(8):
        assert [c for c in stored if c.startswith(f"w{n}-")] == [f"w{n}-{i}" for i in range(200)]


@pytest.mark.slow
def test_four_processes_popping_never_pop_the_same_item_twice(url: str, tmp_path: Path) -> None:
    session = PraisonSession("shared", user_id="u", store=url)
    run(session.add_items([say(f"item {i}") for i in range(400)]))
    popped = [item for out in run_together(worker_command, "pop", url, tmp_path, 4) for item in out]
    assert sorted(popped) == sorted(f"item {i}" for i in range(400))
    assert run(session.get_items()) == []
    session.close()


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX SIGKILL")
def test_a_sigkill_during_add_items_leaves_the_log_whole(url: str, tmp_path: Path) -> None:
    """Ten writers killed 30-250 ms into a loop of add_items: every acknowledged turn is
    stored whole and in order, at most the turn in flight is stored too, and only whole."""
    for trial in range(10):
        session_id, acks = f"crash-{trial}", tmp_path / f"crash-{trial}.acks"
        proc = subprocess.Popen(
            worker_command("crash-adder", url, session_id, str(acks)),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
        )
        try:
            assert proc.stdout is not None and proc.stdin is not None
            assert proc.stdout.readline() == "ready\n", proc.stderr.read()  # type: ignore[union-attr]
            proc.stdin.write("go\n")
            proc.stdin.flush()
            time.sleep(0.03 + 0.022 * trial)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        acked = len(acks.read_text().splitlines()) if acks.exists() else 0
        session = PraisonSession(session_id, user_id="crash", store=url)
        stored = run(session.get_items())
        turns = len(stored) // 4
        assert acked <= turns <= acked + 1, (trial, acked, len(stored))
        assert stored == [item for i in range(turns) for item in turn_items(i)], trial
        run(session.add_items(turn_items(turns)))  # the log takes the next turn
        assert len(run(session.get_items())) == 4 * (turns + 1)
        session.close()


# -- encryption at rest ----------------------------------------------------------------------


def test_items_are_sealed_at_rest_with_an_encryption_key(kind: str, tmp_path: Path) -> None:
    store: Any = InMemorySession() if kind == "memory" else store_url(kind, tmp_path)
    secret = "my card number is 4111 1111 1111 1111"
    settings = {"encryption_key": ENCRYPTION_KEY}
    session = PraisonSession("chat", user_id="u", store=store, settings=settings)
    run(session.add_items([say(secret), call("c1"), output("c1", secret)]))
    assert run(session.get_items()) == [say(secret), call("c1"), output("c1", secret)]
    assert run(session.pop_item()) == output("c1", secret)
    session.close()

    raw = store if kind == "memory" else open_store(store)  # the records as stored
    stored = run(
        beneath(raw.backend).read_log(record_key("chat", "u"), path=LOG_NAME, start=0, stop=None)
    )
    assert len(stored) == 2 and secret not in json.dumps(stored)
    if kind != "memory":
        run(raw.close())
    with pytest.raises(KeyRequiredError):  # a store without the key never hands out ciphertext
        Session("chat", "u", store=store).read_messages(LOG_NAME)
    keyless = PraisonSession("chat", user_id="u", store=store)  # nor does the adapter without it
    for attempt in (
        keyless.get_items,
        lambda: keyless.add_items([say("written in clear")]),
        keyless.pop_item,
        keyless.clear_session,
    ):
        with pytest.raises(KeyRequiredError):
            run(attempt())
    keyless.close()
    sealed = PraisonSession("chat", user_id="u", store=store, settings=settings)
    assert run(sealed.get_items()) == [say(secret), call("c1")]  # all there, nothing added
    sealed.close()
    if kind in ("json", "sqlite"):
        files = [p for p in tmp_path.rglob("*") if p.is_file()]
        assert files and not any(secret.encode() in p.read_bytes() for p in files)


# -- packaging and the benchmark -------------------------------------------------------------


def test_importing_praisonsession_never_imports_the_sdk() -> None:
    assert_not_imported("'agents' in sys.modules", "the SDK was imported")


@pytest.mark.slow
def test_the_benchmark_runs_quickly_and_prints_every_row(tmp_path: Path) -> None:
    rows = [
        "| add_items, one turn (4 items) |",
        "| get_items(limit=20) @10 |",
        "| get_items(limit=20) @100 |",
        "| get_items(limit=20) @1,000 |",
        "| get_items() @100 |",
        "| pop_item @100 |",
        "| clear_session @100 |",
        "median round >= 1.1",
        "SQLiteSession: WAL, synchronous=FULL (read back from its connection)",
        "PraisonSession: WAL, synchronous=FULL (read back from its connection)",
        "ratio best | ratio median",
        "redis-server: appendonly",
        "x RedisSession",
        "get_items flat",
    ]
    assert_benchmark_prints("bench_openai_agents.py", rows, tmp_path, timeout=300)
