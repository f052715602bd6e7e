"""Differential tests: seeded random sequences of operations, run on our adapter and on the
framework's own reference backend side by side, every answer compared.

- OpenAI Agents SDK: ``PraisonSession`` against ``agents.SQLiteSession``.
- Google ADK: ``PraisonSessionService`` against ``InMemorySessionService``.
- LangGraph: ``PraisonSaver`` against ``InMemorySaver`` (whole graphs run on each), and
  ``PraisonStore`` against ``InMemoryStore``.

Each runs on every backend, plain and encrypted, from a few fixed seeds (a failure names its
seed and step, so it can be replayed). The divergences a framework page documents (ids our
stores cannot hold, times we keep to the microsecond...) are left out of the sequences, and
listed once in each adapter's page.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import pytest
from agents import SQLiteSession
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.sessions import InMemorySessionService
from google.adk.sessions.base_session_service import GetSessionConfig
from google.genai import types
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command

from backends import ENCRYPTION_KEY
from lg_graphs import approval_graph, chat_graph, chat_input, summary
from praisonsession.integrations.adk import PraisonSessionService
from praisonsession.integrations.langgraph import PraisonSaver
from praisonsession.integrations.langgraph_store import PraisonStore
from praisonsession.integrations.openai_agents import PraisonSession

SEEDS = [1, 2, 3]


@pytest.fixture(params=["plain", "encrypted"])
def settings(request: pytest.FixtureRequest) -> dict[str, Any] | None:
    return {"encryption_key": ENCRYPTION_KEY} if request.param == "encrypted" else None


# -- OpenAI Agents SDK ------------------------------------------------------------------------


def _openai_items(rng: random.Random, step: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for n in range(rng.randint(0, 4)):
        call_id = f"c{rng.randint(0, 5)}"
        kind = rng.choice(["user", "assistant", "call", "output", "output"])
        if kind == "call":
            items.append(
                {"type": "function_call", "call_id": call_id, "name": "f", "arguments": "{}"}
            )
        elif kind == "output":
            items.append({"type": "function_call_output", "call_id": call_id, "output": "ok"})
        else:
            items.append({"role": kind, "content": f"{kind} {step}.{n} é ☃"})
    return items


@pytest.mark.parametrize("seed", SEEDS)
def test_openai_session_answers_as_sqlite_session(
    seed: int, store: Any, settings: Any, tmp_path: Path
) -> None:
    rng = random.Random(seed)

    async def work() -> None:
        ours = PraisonSession(f"chat{seed}", store=store, settings=settings)
        theirs = SQLiteSession(f"chat{seed}", tmp_path / "sdk.db")
        for step in range(60):
            op = rng.choice(["add", "add", "add", "get", "get", "pop", "clear"][: 7 if step else 4])
            where = f"seed {seed}, step {step}: {op}"
            if op == "add":
                items = _openai_items(rng, step)
                await ours.add_items(items)
                await theirs.add_items(items)
            elif op == "get":
                limit = rng.choice([None, 0, 1, 2, 3, 5, 8, 100, -1])
                assert await ours.get_items(limit) == await theirs.get_items(limit), where
            elif op == "pop":
                assert await ours.pop_item() == await theirs.pop_item(), where
            else:
                await ours.clear_session()
                await theirs.clear_session()
        assert await ours.get_items() == await theirs.get_items(), f"seed {seed}: the end"
        await ours.aclose()
        theirs.close()

    asyncio.run(work())


# -- Google ADK -------------------------------------------------------------------------------

_APPS = ["shop", "s"]
_USERS = ["u1", "u2"]
_IDS = ["a", "b", "c"]


def _adk_state(rng: random.Random, step: int) -> dict[str, Any]:
    names = ["k0", "k1", "app:theme", "app:n", "user:rank", "user:tags", "temp:scratch"]
    values: list[Any] = [step, f"v{step}", [step, {"x": step}], None, True, 1.5]
    return {name: rng.choice(values) for name in rng.sample(names, rng.randint(0, 4))}


def _adk_seen(session: Any) -> Any:
    """A session as compared: ids, state, events (times exact once it has events)."""
    if session is None:
        return None
    events = [
        (e.id, e.author, e.content, e.actions.state_delta, e.timestamp) for e in session.events
    ]
    shown = (session.app_name, session.user_id, session.id, session.state, events)
    return (*shown, session.last_update_time) if session.events else shown


@pytest.mark.parametrize("seed", SEEDS)
def test_adk_service_answers_as_in_memory_session_service(
    seed: int, store: Any, settings: Any
) -> None:
    rng = random.Random(seed)

    async def work() -> None:
        ours = PraisonSessionService(store, settings=settings)
        theirs = InMemorySessionService()
        services = (ours, theirs)
        clock = 1_700_000_000.0
        last: Event | None = None
        for step in range(50):
            op = rng.choice(["create", "create", "get", "list", "append", "append", "delete"])
            app, user, sid = rng.choice(_APPS), rng.choice(_USERS), rng.choice(_IDS)
            where = f"seed {seed}, step {step}: {op} {app}/{user}/{sid}"
            if op == "create":
                state = _adk_state(rng, step)
                made = []
                for service in services:
                    try:
                        made.append(
                            _adk_seen(
                                await service.create_session(
                                    app_name=app, user_id=user, session_id=sid, state=dict(state)
                                )
                            )[:4]
                        )
                    except AlreadyExistsError:
                        made.append("exists")
                assert made[0] == made[1], where
            elif op == "get":
                config = rng.choice(
                    [
                        None,
                        GetSessionConfig(num_recent_events=rng.randint(1, 3)),
                        GetSessionConfig(after_timestamp=clock - rng.randint(0, 5)),
                    ]
                )
                got = [
                    _adk_seen(
                        await service.get_session(
                            app_name=app, user_id=user, session_id=sid, config=config
                        )
                    )
                    for service in services
                ]
                assert got[0] == got[1], where
            elif op == "list":
                who = rng.choice([*_USERS, None])
                listed = [
                    sorted(
                        (s.user_id, s.id, sorted(s.state.items(), key=repr))
                        for s in (await service.list_sessions(app_name=app, user_id=who)).sessions
                    )
                    for service in services
                ]
                assert listed[0] == listed[1], where
            elif op == "delete":
                for service in services:
                    await service.delete_session(app_name=app, user_id=user, session_id=sid)
            else:
                held = [
                    await service.get_session(app_name=app, user_id=user, session_id=sid)
                    for service in services
                ]
                if held[0] is None or held[1] is None:
                    assert held[0] is held[1] is None, where
                    continue
                again = last is not None and rng.random() < 0.2
                if not again:
                    clock += 1
                    text = types.Content(role="user", parts=[types.Part(text=f"said {step}")])
                    last = Event(
                        invocation_id=f"inv{step}",
                        author="user",
                        content=text,
                        timestamp=clock,
                        actions=EventActions(state_delta=_adk_state(rng, step)),
                    )
                assert last is not None
                for service, session in zip(services, held, strict=True):
                    await service.append_event(session, last.model_copy(deep=True))
                assert _adk_seen(held[0]) == _adk_seen(held[1]), where
        await ours.close()

    asyncio.run(work())


# -- LangGraph: the saver ---------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_langgraph_saver_runs_graphs_as_in_memory_saver(
    seed: int, store: Any, settings: Any
) -> None:
    rng = random.Random(seed)
    ours = PraisonSaver(store, settings=settings)
    theirs = InMemorySaver()
    threads = ["t1", "t2", "t3"]
    for step in range(14):
        thread = rng.choice(threads)
        config = {"configurable": {"thread_id": f"{thread}-{seed}"}}
        op = rng.choice(["approval", "resume", "chat", "delete"])
        where = f"seed {seed}, step {step}: {op} {thread}"
        seen = []
        for saver in (ours, theirs):
            if op == "chat":
                graph = chat_graph(saver, 3 + step % 3)
                graph.invoke(chat_input(), config)
            elif op == "delete":
                saver.delete_thread(config["configurable"]["thread_id"])
                graph = approval_graph(saver)
            else:
                graph = approval_graph(saver)
                if op == "approval":
                    graph.invoke({"steps": [], "answer": ""}, config)
                elif graph.get_state(config).next:  # resume only a thread at its interrupt
                    graph.invoke(Command(resume=f"yes {step}"), config)
            seen.append(summary(graph, config))
            seen.append(len(list(saver.list(config))))
        assert seen[0] == seen[2] and seen[1] == seen[3], where
    ours.close()


# -- LangGraph: the store ---------------------------------------------------------------------

_SPACES = [("u1",), ("u1", "notes"), ("u1", "notes", "work"), ("u2", "notes")]


def _items(found: list[Any]) -> list[Any]:
    return [(item.namespace, item.key, item.value) for item in found]


@pytest.mark.parametrize("seed", SEEDS)
def test_langgraph_store_answers_as_in_memory_store(seed: int, store: Any, settings: Any) -> None:
    rng = random.Random(seed)
    ours = PraisonStore(store, settings=settings, index=False)
    theirs = InMemoryStore()
    both = (ours, theirs)
    for step in range(60):
        op = rng.choice(["put", "put", "put", "get", "delete", "search", "namespaces"])
        space, key = rng.choice(_SPACES), f"k{rng.randint(0, 4)}"
        where = f"seed {seed}, step {step}: {op} {space}/{key}"
        if op == "put":
            value = {"n": rng.randint(0, 3), "tag": rng.choice(["a", "b"]), "step": step}
            for s in both:
                s.put(space, key, value)
        elif op == "get":
            got = [s.get(space, key) for s in both]
            assert [None if g is None else _items([g]) for g in got] == [
                None if got[1] is None else _items([got[1]])
            ] * 2, where
        elif op == "delete":
            for s in both:
                s.delete(space, key)
        elif op == "search":
            prefix = space[: rng.randint(1, len(space))]
            query: dict[str, Any] = {}
            if rng.random() < 0.5:
                query["filter"] = rng.choice([{"tag": "a"}, {"n": 1}, {"n": {"$gt": 1}}])
            found = [sorted(_items(s.search(prefix, limit=100, **query)), key=repr) for s in both]
            assert found[0] == found[1], where
        else:
            prefix = space[: rng.randint(0, len(space))]
            depth = rng.choice([None, 1, 2])
            listed = [
                sorted(s.list_namespaces(prefix=prefix or None, max_depth=depth)) for s in both
            ]
            # InMemoryStore keeps listing a namespace once its last item is gone (even one only
            # read): a divergence its page lists; compared, the namespaces that hold items
            held = {item.namespace for item in theirs.search((), limit=10_000)}
            shown = {
                space[:depth] if depth else space
                for space in held
                if space[: len(prefix)] == prefix
            }
            assert listed[0] == sorted(shown), where
            assert set(listed[0]) <= set(listed[1]), where
    ours.close()
