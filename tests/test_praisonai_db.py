"""PraisonAI's agent persistence (``DbAdapter``) on every praisonsession store: ``PraisonDb``.

A real PraisonAI ``Agent`` with ``memory=MemoryConfig(db=PraisonDb(...))``, its model the
scripted server on 127.0.0.1: it resumes in a new process with its tool calls and their
results; two users with one session id never see each other's turns (PraisonAI's own SQLiteDB
hands the second user the first one's); the conversation is one of our sessions (listed,
shown, erased); runs, traces and spans as the protocol lists them; export and import; many
writers at once; encryption at rest; failures that are logged and written later, never
forgotten; bad input refused with typed errors. Every test runs on memory, JSON, SQLite, Redis
and PostgreSQL unless it needs more than one process (then on the four shared ones).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import praisonai_workers
import pytest
from praisonaiagents.db import AsyncDbAdapter, DbAdapter, DbMessage, ToolTurnDbAdapterProtocol

import praisonsession
from backends import ENCRYPTION_KEY, SERVERS, SHARED, STORE_BACKENDS, store_url
from llm_server import ScriptedChatServer
from praisonsession import (
    ConflictError,
    InMemorySession,
    InvalidIdError,
    InvalidValueError,
    KeyRequiredError,
    Session,
    open_store,
)
from praisonsession._internal import runtime
from praisonsession.integrations.praisonai import (
    EXPORT_FORMAT,
    MESSAGES_LOG,
    RUNS_LOG,
    TRACES_LOG,
    TRACES_SESSION,
    AsyncPraisonDb,
    PraisonDb,
)

WORKER = Path(__file__).with_name("praisonai_workers.py")


@pytest.fixture(params=STORE_BACKENDS)
def kind(request: pytest.FixtureRequest) -> str:
    if request.param in SERVERS:
        request.getfixturevalue(SERVERS[request.param])
    return str(request.param)


@pytest.fixture(params=SHARED)
def shared(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of a fresh store many processes open."""
    if request.param in SERVERS:
        request.getfixturevalue(SERVERS[request.param])
    return store_url(request.param, tmp_path)


@pytest.fixture
def db(kind: str, tmp_path: Path) -> Iterator[PraisonDb]:
    """A PraisonDb over a fresh store of each kind (an instance for memory, else its URL)."""
    store: Any = InMemorySession() if kind == "memory" else store_url(kind, tmp_path)
    with PraisonDb(store) as made:
        yield made
    if kind == "memory":
        runtime.run(store.close())


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedChatServer]:
    """The scripted model, as PraisonAI's OpenAI client finds it (its base URL)."""
    with ScriptedChatServer() as server:
        for name, value in praisonai_workers.QUIET.items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        yield server


def turns(messages: list[DbMessage]) -> list[tuple[str, Any]]:
    return [(m.role, m.content) for m in messages]


def worker(store: str, **spec: Any) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(WORKER), json.dumps({"store": store, **spec})],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["pending"] == 0, out
    return out


def without_system(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in messages if m["role"] != "system"]


# -- the protocols ---------------------------------------------------------------------------


def test_it_is_each_of_praisonais_protocols(db: PraisonDb) -> None:
    assert isinstance(db, DbAdapter) and isinstance(db, ToolTurnDbAdapterProtocol)
    assert isinstance(db.aio, AsyncDbAdapter) and isinstance(db.aio, AsyncPraisonDb)
    assert db.get_schema_version() == "1.0"
    assert db.migrate_schema("1.0", "1.0") is True and db.migrate_schema("0.1", "9.0") is False
    assert db.check_schema_compatibility()[0] is True


def test_the_hooks_keep_a_conversation_and_hand_it_back(db: PraisonDb) -> None:
    assert db.on_agent_start("Helper", "s1", "alice", {"role": "Assistant"}) == []
    db.on_run_start("s1", "run-1", "add 2 and 3", {"agent_name": "Helper"})
    db.on_user_message("s1", "add 2 and 3")
    call = {"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{}"}}
    db.on_assistant_message("s1", "", tool_calls=[call])
    db.on_tool_message("s1", "5", tool_call_id="c1")
    db.on_tool_call("s1", "add", {"a": 2, "b": 3}, 5)
    db.on_agent_message("s1", "It is 5.", {"model": "m"})
    db.on_run_end("s1", "run-1", "It is 5.", "completed", {"tokens": 9})
    db.on_agent_end("s1")
    assert db.export_session("s1")["metadata"]["role"] == "Assistant"
    assert "ended_at" in db.export_session("s1")["metadata"]

    again = PraisonDb(db.store).on_agent_start("Helper", "s1", "alice")
    assert turns(again) == [
        ("user", "add 2 and 3"),
        ("assistant", ""),
        ("tool", "5"),
        ("assistant", "It is 5."),
    ]
    assert again[1].tool_calls == [call] and again[2].tool_call_id == "c1"
    assert again[3].metadata == {"model": "m"} and {m.run_id for m in again} == {"run-1"}
    [run] = db.get_runs("s1")
    assert (run.run_id, run.status, run.input_content, run.output_content) == (
        "run-1",
        "completed",
        "add 2 and 3",
        "It is 5.",
    )
    assert run.metrics == {"tokens": 9} and run.agent_name == "Helper" and run.ended_at
    exported = db.export_session("s1")
    assert exported["tool_calls"][0]["args"] == {"a": 2, "b": 3}
    assert exported["metadata"]["agent_name"] == "Helper"
    assert db.export_session("never-started") == {}


def test_a_run_whose_question_was_not_reported_gets_it_before_its_answer(db: PraisonDb) -> None:
    db.on_agent_start("Helper", "s1", "u")
    db.on_run_start("s1", "r1", "asked but not reported")
    db.on_agent_message("s1", "answered")
    db.on_run_end("s1", "r1", "answered")
    db.on_run_start("s1", "r2", "asked")
    db.on_user_message("s1", "asked")  # reported: never written twice
    db.on_agent_message("s1", "answered again")
    db.on_run_end("s1", "r2", "answered again")
    db.on_run_start("s1", "r3", "failed before any answer")
    db.on_run_end("s1", "r3", None, "error")  # no answer: nothing is written for it
    stored = db.on_agent_start("Helper", "s1", "u")
    assert turns(stored) == [("user", "asked but not reported"), ("assistant", "answered"),
                             ("user", "asked"), ("assistant", "answered again")]  # fmt: skip
    assert [m.run_id for m in stored] == ["r1", "r1", "r2", "r2"]
    assert stored[0].metadata == {"reported_by": "on_run_start"} and stored[2].metadata == {}


def test_runs_are_listed_newest_first_within_a_limit(db: PraisonDb) -> None:
    db.on_agent_start("Helper", "s1", "u")
    for n in range(40):
        db.on_run_start("s1", f"run-{n}", f"turn {n}")
        db.on_run_end("s1", f"run-{n}", f"answer {n}", "error" if n == 39 else "completed")
    db.on_run_start("s1", "run-open", "still running")
    runs = db.get_runs("s1")
    assert [r.run_id for r in runs] == ["run-open", *(f"run-{n}" for n in reversed(range(40)))]
    assert runs[0].status == "running" and runs[1].status == "error"
    assert [r.run_id for r in db.get_runs("s1", limit=3)] == ["run-open", "run-39", "run-38"]
    assert db.get_runs("s1", limit=0) == []


def test_traces_keep_their_spans_and_are_listed_newest_first(db: PraisonDb) -> None:
    db.on_agent_start("Helper", "s1", "alice")
    db.on_trace_start("t1", session_id="s1", run_id="r1", agent_name="Helper", user_id="alice")
    db.on_span_start("sp1", "t1", "llm_call", attributes={"model": "m"})
    db.on_span_start("sp2", "t1", "tool", parent_span_id="sp1")
    db.on_span_end("sp2", "error", {"why": "boom"})
    db.on_span_end("sp1")
    db.on_trace_end("t1", "ok", {"tokens": 3})
    db.on_trace_start("t2", session_id="s1", user_id="alice")
    db.on_trace_start("t3", user_id="alice")  # no session: the user's own traces session
    traces = db.get_traces(session_id="s1")
    assert [t.trace_id for t in traces] == ["t2", "t1"]
    t1 = traces[1]
    assert (t1.status, t1.metadata, t1.user_id, t1.run_id) == ("ok", {"tokens": 3}, "alice", "r1")
    assert [(s.span_id, s.status, s.parent_span_id) for s in t1.spans] == [
        ("sp1", "ok", None),
        ("sp2", "error", "sp1"),
    ]
    assert t1.spans[1].attributes == {"why": "boom"} and t1.spans[0].attributes == {"model": "m"}
    assert [t.trace_id for t in db.get_traces(user_id="alice")] == ["t3", "t2", "t1"]
    assert [t.trace_id for t in db.get_traces(user_id="alice", limit=1)] == ["t3"]
    assert db.get_traces(user_id="bob") == []
    assert Session(TRACES_SESSION, "alice", store=db.store).message_count(TRACES_LOG) == 1


def test_an_export_imports_equal_on_another_store(db: PraisonDb) -> None:
    db.on_agent_start("Helper", "s1", "alice", {"goal": "help"})
    db.on_run_start("s1", "r1", "hi")
    db.on_user_message("s1", "hi")
    db.on_agent_message("s1", "hello")
    db.on_run_end("s1", "r1", "hello")
    db.on_trace_start("t1", session_id="s1")
    exported = db.export_session("s1")
    assert exported["format"] == EXPORT_FORMAT and exported["user_id"] == "alice"
    assert json.loads(json.dumps(exported)) == exported  # JSON data, as PraisonAI writes JSONL

    with PraisonDb(InMemorySession()) as other:
        assert other.import_session(exported) == "s1"
        copied = other.export_session("s1", user_id="alice")
        assert {k: v for k, v in copied.items() if k != "created_at"} == {
            k: v for k, v in exported.items() if k != "created_at"
        }
        assert turns(other.on_agent_start("Helper", "s1", "alice")) == [
            ("user", "hi"),
            ("assistant", "hello"),
        ]
        with pytest.raises(ConflictError):  # never over a stored conversation
            other.import_session(exported)
        fresh = other.import_session({k: v for k, v in exported.items() if k != "session_id"})
        assert fresh != "s1" and len(other.export_session(fresh, user_id="alice")["messages"]) == 2


# -- a real PraisonAI agent ------------------------------------------------------------------


def test_an_agent_resumes_with_its_tool_calls_on_every_store(
    db: PraisonDb, model: ScriptedChatServer
) -> None:
    from praisonsession.llm.local_server import Reply

    model.queue(Reply.tool_calls(("add", {"a": 2, "b": 3})), Reply.text("It is 5."))
    first = praisonai_workers.agent_for(db, "alice", "chat", tool=True)
    assert praisonai_workers.turn(first, "What is 2+3?", tool=True) == "It is 5."

    model.queue(Reply.text("You asked for 2+3."))
    second = praisonai_workers.agent_for(PraisonDb(db.store), "alice", "chat", tool=True)
    assert praisonai_workers.turn(second, "What did I ask?", tool=True) == "You asked for 2+3."
    seen = without_system(model.chat_requests[-1].body["messages"])
    assert [m["role"] for m in seen] == ["user", "assistant", "tool", "assistant", "user"]
    assert seen[1]["tool_calls"][0]["function"]["name"] == "add"
    assert seen[2]["tool_call_id"] == seen[1]["tool_calls"][0]["id"] and seen[2]["content"] == "5"

    with Session("chat", "alice", store=db.store) as ours:  # one of our sessions
        stored = ours.read_messages(MESSAGES_LOG)
        assert [m["role"] for m in stored] == ["user", "assistant", "tool", "assistant"] * 1 + [
            "user",
            "assistant",
        ]
        assert ours.list_logs() == {MESSAGES_LOG: 6}  # a streamed turn starts no run


@pytest.mark.slow
def test_an_agent_resumes_in_a_new_process(shared: str) -> None:
    first = worker(
        shared,
        user="alice",
        session="chat",
        prompt="What is 2+3?",
        replies=[{"add": {"a": 2, "b": 3}}, "It is 5."],
        tool=True,
    )
    assert first["answer"] == "It is 5."
    second = worker(
        shared,
        user="alice",
        session="chat",
        prompt="And what did I ask?",
        replies=["You asked what 2+3 is."],
        tool=True,
    )
    seen = without_system(second["sent"][0])
    assert [m["role"] for m in seen] == ["user", "assistant", "tool", "assistant", "user"]
    assert seen[0]["content"] == "What is 2+3?" and seen[3]["content"] == "It is 5."
    assert seen[1]["tool_calls"][0]["function"]["arguments"] == json.dumps({"a": 2, "b": 3})
    assert seen[2]["tool_call_id"] == seen[1]["tool_calls"][0]["id"]

    other = worker(shared, user="bob", session="chat", prompt="Hi", replies=["Hello."])
    assert without_system(other["sent"][0]) == [{"role": "user", "content": "Hi"}]


def test_two_users_with_one_session_id_never_see_each_other(
    db: PraisonDb, model: ScriptedChatServer
) -> None:
    """PraisonAI's own SQLiteDB keys a conversation by session id alone, so the second user
    resumes the first one's (issue 40); here each user has their own, even through one
    PraisonDb, even when their agents take turns."""
    alice = praisonai_workers.agent_for(db, "alice", "shared-id", tool=False)
    bob = praisonai_workers.agent_for(db, "bob", "shared-id", tool=False)
    model.say("Hi Alice.", "Hi Bob.", "Still Alice.", "Still Bob.")
    assert alice.chat("I am Alice.", stream=False) == "Hi Alice."
    assert bob.chat("I am Bob.", stream=False) == "Hi Bob."
    assert without_system(model.chat_requests[-1].body["messages"]) == [
        {"role": "user", "content": "I am Bob."}
    ]
    assert alice.chat("Who am I?", stream=False) == "Still Alice."
    assert bob.chat("Who am I?", stream=False) == "Still Bob."
    for user, name in (("alice", "Alice"), ("bob", "Bob")):
        resumed = PraisonDb(db.store).on_agent_start("Helper", "shared-id", user)
        assert turns(resumed) == [
            ("user", f"I am {name}."),
            ("assistant", f"Hi {name}."),
            ("user", "Who am I?"),
            ("assistant", f"Still {name}."),
        ]
    # a call that names no user, where two users share the id, is refused, not guessed
    with pytest.raises(InvalidIdError, match="several users"):
        PraisonDb(db.store).get_runs("shared-id")
    assert len(PraisonDb(db.store).get_runs("shared-id", user_id="bob")) == 2


def test_an_agent_without_a_user_is_the_default_users(
    db: PraisonDb, model: ScriptedChatServer
) -> None:
    model.say("Hello.")
    agent = praisonai_workers.agent_for(db, None, "anon", tool=False)
    assert agent.chat("Hi", stream=False) == "Hello."
    with Session("anon", store=db.store) as ours:
        assert ours.user_id == "default_user"
        assert [m["content"] for m in ours.read_messages(MESSAGES_LOG)] == ["Hi", "Hello."]


def test_an_async_agent_awaits_the_async_hooks(db: PraisonDb, model: ScriptedChatServer) -> None:
    model.say("One.", "Two.")

    async def chat() -> list[str]:
        agent = praisonai_workers.agent_for(db, "carol", "async", tool=False)
        first = await agent.achat("first")
        resumed = praisonai_workers.agent_for(PraisonDb(db.store), "carol", "async", tool=False)
        return [first, await resumed.achat("second")]

    assert asyncio.run(chat()) == ["One.", "Two."]
    # PraisonAI's achat over its OpenAI client reports the answer of a turn, not its question:
    # the question is written before the answer from the run's input, so the resumed agent
    # sends what the first one had in its own history
    assert without_system(model.chat_requests[-1].body["messages"]) == [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "One."},
        {"role": "user", "content": "second"},
    ]
    stored = PraisonDb(db.store).on_agent_start("Helper", "async", "carol")
    assert turns(stored) == [("user", "first"), ("assistant", "One."), ("user", "second"),
                             ("assistant", "Two.")]  # fmt: skip
    assert stored[0].metadata == {"reported_by": "on_run_start"} and stored[0].run_id
    assert [r.status for r in asyncio.run(db.aio.get_runs("async"))] == ["completed"] * 2


# -- one of our sessions ---------------------------------------------------------------------


def test_the_conversation_is_shown_and_erased_as_one_of_ours(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from praisonsession.apps.cli import main

    url = f"sqlite://{tmp_path}/chat.db"
    with PraisonDb(url) as db:
        db.on_agent_start("Helper", "s1", "alice")
        db.on_user_message("s1", "my secret is 1234-5678")
        db.on_agent_message("s1", "noted")
    shown = CliRunner().invoke(main, ["show", "s1", "--user", "alice", "--store", url])
    assert shown.exit_code == 0, shown.output
    assert MESSAGES_LOG in shown.output and "my secret is 1234-5678" in shown.output

    praisonsession.erase_user("alice", store=url)
    with PraisonDb(url) as db:
        assert db.export_session("s1", user_id="alice") == {}
        assert db.on_agent_start("Helper", "s1", "alice") == []
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert b"1234-5678" not in path.read_bytes(), path


def test_erase_user_leaves_nothing_on_every_store(db: PraisonDb) -> None:
    for session in ("a", "b"):
        db.on_agent_start("Helper", session, "erin")
        db.on_user_message(session, "private words")
        db.on_run_start(session, "r", "private words")
    db.on_trace_start("t", user_id="erin")
    franks = PraisonDb(db.store)  # another user's conversation of the same id
    franks.on_agent_start("Helper", "a", "frank")
    franks.on_user_message("a", "frank's words")
    report = praisonsession.erase_user("erin", store=db.store)
    assert report.sessions == 3 and sorted(report.session_ids) == ["a", "b", TRACES_SESSION]
    assert runtime.run(db.store.list_sessions("erin")) == []
    assert db.export_session("a", user_id="erin") == {}
    assert [m["content"] for m in db.export_session("a", user_id="frank")["messages"]] == [
        "frank's words"
    ]


def test_a_conversation_not_resumed_within_its_ttl_is_gone(
    kind: str, tmp_path: Path, frozen_clock: Any
) -> None:
    # a URL takes the settings' TTL; a store instance keeps its own (as Session(store=...) does)
    store: Any = InMemorySession(default_ttl=60) if kind == "memory" else store_url(kind, tmp_path)
    with PraisonDb(store, settings={"default_ttl": 60}) as db:
        db.on_agent_start("Helper", "short", "u")
        db.on_user_message("short", "remember me")
        frozen_clock.advance(59)  # each resume restarts the TTL
        assert turns(db.on_agent_start("Helper", "short", "u")) == [("user", "remember me")]
        frozen_clock.advance(59)
        assert turns(db.on_agent_start("Helper", "short", "u")) == [("user", "remember me")]
        frozen_clock.advance(61)
        assert db.on_agent_start("Helper", "short", "u") == []
        assert db.export_session("short", user_id="u")["messages"] == []
    if kind == "memory":
        runtime.run(store.close())


# -- many writers ----------------------------------------------------------------------------


def test_threads_writing_one_session_lose_nothing(db: PraisonDb) -> None:
    db.on_agent_start("Helper", "busy", "u")

    def write(n: int) -> None:
        for i in range(25):
            db.on_user_message("busy", f"w{n}-{i}")

    threads = [threading.Thread(target=write, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stored = [m.content for m in db.on_agent_start("Helper", "busy", "u")]
    assert len(stored) == 150
    for n in range(6):
        assert [c for c in stored if c.startswith(f"w{n}-")] == [f"w{n}-{i}" for i in range(25)]


WRITER = """
import sys
from praisonsession.integrations.praisonai import PraisonDb
url, n = sys.argv[1], sys.argv[2]
with PraisonDb(url) as db:
    db.on_agent_start("Helper", "busy", "u")
    for i in range(40):
        db.on_user_message("busy", f"p{n}-{i}")
"""


def test_processes_writing_one_session_lose_nothing(shared: str) -> None:
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, shared, str(n)], stderr=subprocess.PIPE)
        for n in range(4)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err.decode()[-2000:]
    with PraisonDb(shared) as db:
        stored = [m.content for m in db.on_agent_start("Helper", "busy", "u")]
    assert len(stored) == 160
    for n in range(4):
        assert [c for c in stored if c.startswith(f"p{n}-")] == [f"p{n}-{i}" for i in range(40)]


# -- encryption at rest ----------------------------------------------------------------------


def test_turns_are_sealed_at_rest_and_a_keyless_process_is_refused(
    kind: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store: Any = InMemorySession() if kind == "memory" else store_url(kind, tmp_path)
    secret = "my card number is 4111 1111 1111 1111"
    settings = {"encryption_key": ENCRYPTION_KEY}
    with PraisonDb(store, settings=settings) as db:
        db.on_agent_start("Helper", "s1", "alice")
        db.on_user_message("s1", secret)
        db.on_tool_message("s1", secret, tool_call_id="c1")
        db.on_run_start("s1", "r1", secret)
        assert turns(db.on_agent_start("Helper", "s1", "alice")) == [
            ("user", secret),
            ("tool", secret),
        ]

    raw = store if kind == "memory" else open_store(store)  # the records as stored
    from praisonsession.stores import record_key
    from praisonsession.stores.guard import beneath

    for log in (MESSAGES_LOG, RUNS_LOG):  # under the key guard, which hands out no ciphertext
        stored = runtime.run(
            beneath(raw.backend).read_log(record_key("s1", "alice"), path=log, start=0, stop=None)
        )
        assert stored and secret not in json.dumps(stored)
    if kind != "memory":
        runtime.run(raw.close())

    keyless = PraisonDb(store)
    with pytest.raises(KeyRequiredError):
        keyless.on_agent_start("Helper", "s1", "alice")
    with caplog.at_level(logging.WARNING, "praisonsession"), pytest.raises(KeyRequiredError):
        keyless.on_user_message("s1", "written in clear")
    assert "was not stored" in caplog.text and keyless.unwritten == 1
    with PraisonDb(store, settings=settings) as sealed:  # all there, nothing added
        assert turns(sealed.on_agent_start("Helper", "s1", "alice")) == [
            ("user", secret),
            ("tool", secret),
        ]
    if kind in ("json", "sqlite"):
        files = [p for p in tmp_path.rglob("*") if p.is_file()]
        assert files and not any(secret.encode() in p.read_bytes() for p in files)


# -- failures are loud and nothing is forgotten ----------------------------------------------


def test_a_failed_write_is_logged_kept_and_written_with_the_next(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "chat.db"
    settings = {"sqlite_busy_timeout": 0.2, "timeout": 2}
    with PraisonDb(f"sqlite://{path}", settings=settings) as db:
        db.on_agent_start("Helper", "s1", "u")
        db.on_user_message("s1", "one")
        blocker = sqlite3.connect(path, isolation_level=None)
        blocker.execute("BEGIN EXCLUSIVE")  # another program holds the database
        try:
            warned = caplog.at_level(logging.WARNING, "praisonsession")
            with warned, pytest.raises(praisonsession.PraisonSessionError):
                db.on_agent_message("s1", "two")
            assert "the assistant turn of session 's1'" in caplog.text
            assert db.unwritten == 1
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        db.on_user_message("s1", "three")
        assert db.unwritten == 0
        assert [m.content for m in db.on_agent_start("Helper", "s1", "u")] == [
            "one",
            "two",
            "three",
        ]


# -- bad input -------------------------------------------------------------------------------


def test_bad_input_is_refused_with_typed_errors_and_loses_nothing(db: PraisonDb) -> None:
    db.on_agent_start("Helper", "s1", "u")
    db.on_user_message("s1", "kept")
    for bad in (
        lambda: db.on_agent_start("Helper", None, "u"),  # type: ignore[arg-type]
        lambda: db.on_agent_start("Helper", "", "u"),
        lambda: db.on_agent_start("Helper", "s1", 7),  # type: ignore[arg-type]
        lambda: db.on_user_message(None, "x"),  # type: ignore[arg-type]
        lambda: db.on_user_message("s\x00", "x"),
    ):
        with pytest.raises(InvalidIdError):
            bad()
    for bad in (
        lambda: db.on_user_message("s1", 42),  # type: ignore[arg-type]
        lambda: db.on_user_message("s1", "x", metadata="not a dict"),  # type: ignore[arg-type]
        lambda: db.on_user_message("s1", "x", metadata={"f": object()}),
        lambda: db.on_assistant_message("s1", "", tool_calls="c1"),  # type: ignore[arg-type]
        lambda: db.on_tool_message("s1", "5", tool_call_id=None),  # type: ignore[arg-type]
        lambda: db.on_tool_call("s1", "add", "2,3", 5),  # type: ignore[arg-type]
        lambda: db.on_run_start("s1", 1),  # type: ignore[arg-type]
        lambda: db.get_runs("s1", limit=-1),
        lambda: db.get_traces(limit="3"),  # type: ignore[arg-type]
        lambda: db.import_session("data"),  # type: ignore[arg-type]
        lambda: db.import_session({"format": "other/9"}),
        lambda: db.import_session({"session_id": "n", "messages": [{"content": "no role"}]}),
        lambda: db.import_session({"session_id": "n", "messages": "hi"}),
        lambda: PraisonDb(store=42),  # type: ignore[arg-type]
        lambda: AsyncPraisonDb("not a db"),  # type: ignore[arg-type]
    ):
        with pytest.raises(InvalidValueError):
            bad()
    assert db.unwritten == 0
    assert turns(db.on_agent_start("Helper", "s1", "u")) == [("user", "kept")]
    assert db.export_session("n", user_id="default_user") == {}


# -- packaging -------------------------------------------------------------------------------


def test_importing_praisonsession_never_imports_praisonai() -> None:
    code = (
        "import sys, praisonsession, praisonsession.integrations; "
        "assert 'praisonaiagents' not in sys.modules, 'imported'"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    code = "import praisonsession.integrations.praisonai as m; print(m.PraisonDb.__name__)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.stdout.strip() == "PraisonDb", done.stderr


@pytest.mark.slow
def test_the_benchmark_runs_and_prints_every_row(tmp_path: Path) -> None:
    script = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_praisonai_db.py"
    done = subprocess.run(
        [sys.executable, str(script), "--quick"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    for row in ("| turn @10 |", "| turn @1,000 |", "| resume @10 |", "| resume @1,000 |"):
        assert done.stdout.count(row) == 2, done.stdout  # at durability process and power
    assert "DefaultSessionStore: temporary file renamed (os.replace), no fsync" in done.stdout
    assert "SqliteTranscriptStore: WAL, synchronous=" in done.stdout
    assert done.stdout.count(" alone, turn: ") == 3  # sqlite and json at process, sqlite at power
