"""Remote sessions on the real thing: ``python -m praisonsession serve`` as a subprocess on
127.0.0.1, our client against it, and the scripted LLM server behind it.

What the client does (chat, state, the token, PraisonAI's wire format), what the server
answers to bad requests, and what the command refuses. ``test_remote_reliability.py`` has
retries, concurrency, restarts and outages.
"""

from __future__ import annotations

import asyncio
import base64
import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
import requests

from llm_server import ScriptedChatServer
from ports import closed_port
from praisonsession import (
    AsyncSession,
    ConflictError,
    InvalidValueError,
    KeyRequiredError,
    OperationTimeoutError,
    PraisonSessionError,
    RemoteAuthError,
    RemoteConnectionError,
    RemoteError,
    RemoteModeError,
    RemoteRequestError,
    RemoteServerError,
    Session,
    SessionNotFoundError,
)
from praisonsession.agents.agent import module_key
from praisonsession.remote.backend import RemoteBackend
from praisonsession.settings import Settings
from praisonsession.stores import LogWrite, StoredModules, record_key
from remote_fixtures import (  # noqa: F401 - fixtures
    HISTORY,
    TOKEN,
    child_env,
    llm,
    llm_connections_end_with_the_test,
    post,
    remote,
    served,
    turns_of,
)
from remote_server import SessionServer

# -- the client against our server ---------------------------------------------------------


def test_chat_and_state_round_trip_through_the_server(served: SessionServer) -> None:
    session = remote(served, "round-trip", user_id="alice")
    assert session.is_remote and session.agent_url == served.agent_url
    assert session.chat("Hello") == "You said: Hello"
    assert session.send_message("Again") == "You said: Again"

    session.set_state("score", 10)
    assert session.increment_state("score", 5) == 15
    assert session.get_state("score") == 15
    assert session.get_state("missing", "fallback") == "fallback"
    session.save_state({"prefs": {"lang": "Python"}, "tags": [1, 2]})
    assert session.restore_state() == {"score": 15, "prefs": {"lang": "Python"}, "tags": [1, 2]}
    session.delete_state("tags")
    assert session.restore_state() == {"score": 15, "prefs": {"lang": "Python"}}

    history = session.read_messages(HISTORY)
    assert turns_of(history) == [("Hello", "You said: Hello"), ("Again", "You said: Again")]
    assert session.message_count(HISTORY) == 4
    assert [info.session_id for info in session.list_sessions()] == ["round-trip"]
    assert session.get_info().version >= 3
    assert session.is_expired() is False and session.time_to_expiry() is None
    assert "agent_url='http://127.0.0.1" in repr(session)


def test_the_same_session_from_a_new_client_sees_the_same_state_and_history(
    served: SessionServer,
) -> None:
    first = remote(served, "shared-view", user_id="bob")
    first.chat("one")
    first.set_state("n", 1)
    second = remote(served, "shared-view", user_id="bob")
    assert second.get_state("n") == 1
    assert second.chat("two") == "You said: two"
    assert turns_of(first.read_messages(HISTORY)) == [
        ("one", "You said: one"),
        ("two", "You said: two"),
    ]


def test_two_session_ids_are_two_histories(served: SessionServer, llm: ScriptedChatServer) -> None:
    left, right = remote(served, "left"), remote(served, "right")
    left.chat("I am left")
    right.chat("I am right")
    left.chat("still left")
    assert turns_of(left.read_messages(HISTORY)) == [
        ("I am left", "You said: I am left"),
        ("still left", "You said: still left"),
    ]
    assert turns_of(right.read_messages(HISTORY)) == [("I am right", "You said: I am right")]
    sent = llm.last_messages()  # the agent of "left" was sent its own history only
    assert [m["content"] for m in sent if m["role"] == "user"] == ["I am left", "still left"]


def test_user_ids_keep_sessions_apart_too(served: SessionServer) -> None:
    remote(served, "same-id", user_id="u1").set_state("who", "u1")
    assert remote(served, "same-id", user_id="u2").get_state("who") is None


def test_a_url_without_a_scheme_gets_http(served: SessionServer) -> None:
    bare = served.agent_url.removeprefix("http://")
    session = Session(agent_url=bare, session_id="bare", api_key=TOKEN)
    assert session.agent_url == served.agent_url
    assert session.chat("hi") == "You said: hi"


def test_async_session_is_the_same_client_as_coroutines(served: SessionServer) -> None:
    async def main() -> tuple[str, int, str]:
        lazy = AsyncSession("async-lazy", agent_url=served.agent_url, api_key=TOKEN)
        first = await lazy.chat("first call opens it")  # no open() before: it opens itself
        async with AsyncSession("async-ctx", agent_url=served.agent_url, api_key=TOKEN) as s:
            count = await s.increment_state("n", 2)
            reply = await s.send_message("hello")
        await lazy.close()
        return first, count, reply

    assert asyncio.run(main()) == ("You said: first call opens it", 2, "You said: hello")


def test_constructing_an_async_session_does_no_io() -> None:
    with closed_port() as port:
        session = AsyncSession("x", agent_url=f"127.0.0.1:{port}/agent", timeout=2)
        assert session.is_remote  # nothing listens there, and nothing was tried yet
        with pytest.raises(RemoteConnectionError) as caught:
            asyncio.run(session.open())
    refused_at(port, caught.value)


def refused_at(port: int, error: RemoteConnectionError) -> None:
    """``error`` says the server at ``port`` refused every attempt, and what to check."""
    message = str(error)
    assert f"127.0.0.1:{port}/agent" in message and "praisonsession serve" in message
    assert "could not connect (connection refused)" in message
    assert "no answer within" not in message and "may or may not" not in message


class _HeldAdapter(requests.adapters.HTTPAdapter):
    """Sends nothing until the deadline of the task awaiting the session has cancelled it
    (or ended it): then the real connection is made (and refused). ``deadline_came`` tells
    whether it was that or the safety wait that let it go."""

    def __init__(self) -> None:
        super().__init__()
        self.task: asyncio.Task[Any] | None = None
        self.deadline_came = False

    def send(self, *args: Any, **kwargs: Any) -> requests.Response:
        for _ in range(6000):  # 60 s at most, a safety: the deadline's cancel comes in 0.5 s
            if self.task is not None and (self.task.cancelling() or self.task.done()):
                self.deadline_came = True
                break
            threading.Event().wait(0.01)
        return super().send(*args, **kwargs)


def test_a_refused_attempt_still_under_way_when_the_deadline_runs_out_says_refused() -> None:
    """Under load the last retry can end after the operation's deadline: the caller still
    hears that the server is not there (RemoteConnectionError), not a bare timeout, and no
    attempt is made after it was told so."""
    held = _HeldAdapter()
    with closed_port() as port:
        session = AsyncSession("x", agent_url=f"127.0.0.1:{port}/agent", timeout=0.5)
        session._remote._http.mount("http://", held)  # type: ignore[union-attr]

        async def main() -> None:
            held.task = asyncio.current_task()
            await session.open()

        with pytest.raises(RemoteConnectionError) as caught:
            asyncio.run(main())
    assert held.deadline_came  # the attempt was under way when the deadline ran out
    refused_at(port, caught.value)
    assert "(connection refused); 1 attempt in" in str(caught.value)


def held_until_the_deadline_then_hung(read_timeout: float) -> BaseException:
    """What opening a session gets when its first attempt is held until the deadline has
    cancelled the caller and then sent to a server that accepts and never answers, waiting
    ``read_timeout`` for an answer."""
    held = _HeldAdapter()
    answered = threading.Event()  # the worker ends only once the test has its outcome
    with closed_port() as port, socket.create_server(("127.0.0.1", 0)) as hung:
        hung_port = hung.getsockname()[1]
        session = AsyncSession("x", agent_url=f"127.0.0.1:{port}/agent", timeout=0.5)
        original = held.send

        def to_the_hung_server(request: Any, **kwargs: Any) -> requests.Response:
            request.url = request.url.replace(f":{port}/", f":{hung_port}/")
            try:
                return original(request, **{**kwargs, "timeout": read_timeout})
            finally:
                if read_timeout > 1:
                    answered.wait(60)

        held.send = to_the_hung_server  # type: ignore[method-assign]
        session._remote._http.mount("http://", held)  # type: ignore[union-attr]

        async def main() -> None:
            held.task = asyncio.current_task()
            await session.open()

        loop = asyncio.new_event_loop()  # asyncio.run would join the waiting worker first
        try:
            with pytest.raises(PraisonSessionError) as caught:
                loop.run_until_complete(main())
        finally:
            hung.close()  # the worker's request ends (connection reset), after the caller's
            answered.set()
            if pending := asyncio.all_tasks(loop):
                loop.run_until_complete(asyncio.wait(pending))
            loop.close()
    assert held.deadline_came  # the attempt was under way when the deadline ran out
    return caught.value


def test_an_unanswered_attempt_still_under_way_when_the_deadline_runs_out_says_so() -> None:
    """The attempt's read timeout ends after the deadline (under load): the caller still gets
    the client's error naming what went wrong, not a bare timeout."""
    error = held_until_the_deadline_then_hung(read_timeout=0.05)
    assert isinstance(error, RemoteConnectionError), error
    assert "no answer within timeout=0.5 s" in str(error)


def test_an_attempt_held_past_its_timeouts_leaves_the_deadlines_timeout_in_the_end() -> None:
    """The wait for an attempt under way is bounded: one held on a server beyond its socket
    timeouts (a server trickling its answer; here a 60 s read timeout stands for it) leaves
    the caller with the deadline's OperationTimeoutError after another timeout at most."""
    error = held_until_the_deadline_then_hung(read_timeout=60)
    assert isinstance(error, OperationTimeoutError) and "timeout=0.5 s" in str(error), error


def test_an_async_factory_is_hosted_too(served: SessionServer) -> None:
    session = Session(agent_url=served.base_url + "/async", session_id="af", api_key=TOKEN)
    assert session.chat("via async factory") == "You said: via async factory"
    assert len(session.read_messages(module_key("Helper") + ".history")) == 2


def test_extra_chat_arguments_go_in_the_body_but_cannot_change_the_session(
    served: SessionServer,
) -> None:
    session = remote(served, "extras")
    assert session.chat("with extras", temperature=0.2, tags=["a"]) == "You said: with extras"
    with pytest.raises(InvalidValueError, match="session_id"):
        session.chat("elsewhere", session_id="other")


# -- what runs where -----------------------------------------------------------------------


def test_memory_knowledge_and_agents_say_to_run_them_on_the_server(served: SessionServer) -> None:
    session = remote(served, "modes")
    for call in (
        lambda: session.add_memory("tea"),
        lambda: session.search_memory("tea"),
        lambda: session.clear_memory(),
        lambda: session.add_knowledge("some text"),
        lambda: session.search_knowledge("text"),
        lambda: session.get_context("tea"),
        lambda: session.memory.search_long_term("tea"),
        lambda: session.Agent(name="Local"),
    ):
        with pytest.raises(RemoteModeError, match="server") as caught:
            call()
        assert isinstance(caught.value, ValueError)  # what PraisonAI raises


def test_chat_on_a_local_session_says_how_to_chat_locally() -> None:
    session = Session("local", store="memory://")
    with pytest.raises(RemoteModeError, match=r"session\.Agent\(") as caught:
        session.chat("hi")
    assert isinstance(caught.value, ValueError)
    with pytest.raises(RemoteModeError):
        session.send_message("hi")


def test_remote_options_are_checked() -> None:
    with pytest.raises(InvalidValueError, match="api_key"):
        Session("s", store="memory://", api_key="token-for-nothing")
    with pytest.raises(InvalidValueError, match="not both"):
        Session("s", agent_url="127.0.0.1:1/agent", store="memory://")
    for bad in ("ftp://127.0.0.1/agent", "", "http://", 42):
        with pytest.raises(InvalidValueError):
            Session("s", agent_url=bad)
    with pytest.raises(InvalidValueError):
        Session("s", agent_url="127.0.0.1:1/agent", api_key="")


# -- the token -----------------------------------------------------------------------------


def test_no_token_and_a_wrong_token_get_401_and_a_typed_error(served: SessionServer) -> None:
    with pytest.raises(RemoteAuthError, match="no token was sent") as caught:
        remote(served, "guarded", api_key=None)
    assert caught.value.status == 401 and isinstance(caught.value, RemoteError)
    wrong = "wrong-token-value-xyz"
    with pytest.raises(RemoteAuthError, match="a token was sent") as caught:
        remote(served, "guarded", api_key=wrong)
    assert wrong not in str(caught.value) and TOKEN not in str(caught.value)

    answer = post(served.agent_url, {"query": "hi"}, token=None)
    assert answer.status_code == 401
    assert answer.headers["WWW-Authenticate"] == "Bearer"
    assert answer.json()["error"]["type"] == "RemoteAuthError"
    assert post(served.agent_url, {"query": "hi"}, token=wrong).status_code == 401
    store_route = served.agent_url + "/store/get_state"
    assert post(store_route, {"session_id": "guarded"}, token=None).status_code == 401


def test_praisonai_s_x_auth_token_header_is_accepted(served: SessionServer) -> None:
    answer = post(
        served.agent_url,
        {"query": "hi", "session_id": "xat"},
        token=None,
        **{"X-Auth-Token": TOKEN},
    )
    assert answer.status_code == 200 and answer.json()["response"] == "You said: hi"


def test_the_token_can_come_from_the_environment(
    served: SessionServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PRAISONSESSION_REMOTE_TOKEN", TOKEN)
    assert remote(served, "env-token", api_key=None).chat("hi") == "You said: hi"
    assert TOKEN not in repr(Settings())


def test_health_and_the_api_docs_need_no_token(served: SessionServer) -> None:
    health = requests.get(served.base_url + "/health", timeout=10).json()
    assert health["status"] == "ok" and health["server"] == "praisonsession"
    assert health["endpoints"] == ["/agent", "/async", "/broken"]
    assert requests.get(served.agent_url + "/health", timeout=10).status_code == 200
    schema = requests.get(served.base_url + "/openapi.json", timeout=10).json()
    assert "/agent" in schema["paths"] and "/agent/store/increment" in schema["paths"]
    assert requests.get(served.base_url + "/docs", timeout=10).status_code == 200


# -- bad requests get typed JSON errors ------------------------------------------------------


def test_malformed_json_and_a_missing_query_are_400(served: SessionServer) -> None:
    nested = b"[" * 20_000 + b"]" * 20_000  # RecursionError in json, once a 500
    for body in (b'{"query": "unterminated', b"[1, 2]", {"session_id": "no-query"}, b"NaN", nested):
        answer = post(served.agent_url, body)
        assert answer.status_code == 400, body
        error = answer.json()["error"]
        assert error["type"] == "InvalidValueError" and error["status"] == 400
    bad_id = post(served.agent_url, {"query": "hi", "session_id": "bad\x00id"})
    assert bad_id.status_code == 400 and bad_id.json()["error"]["type"] == "InvalidIdError"


def test_a_body_over_the_cap_is_413(served: SessionServer) -> None:
    answer = post(served.agent_url, {"query": "x" * 100_000})
    assert answer.status_code == 413
    assert answer.json()["error"]["type"] == "RemoteRequestError"
    session = remote(served, "big")
    with pytest.raises(RemoteRequestError, match="larger than this server accepts") as caught:
        session.set_state("blob", "y" * 100_000)
    assert caught.value.status == 413
    assert session.get_state("blob") is None  # nothing was written


def test_an_unknown_agent_path_is_404(served: SessionServer) -> None:
    answer = post(served.base_url + "/nowhere", {"query": "hi"})
    assert answer.status_code == 404
    assert "/agent" in answer.json()["error"]["message"]
    with pytest.raises(RemoteRequestError, match="hosts no agent at '/nowhere'") as caught:
        Session(agent_url=served.base_url + "/nowhere", api_key=TOKEN)
    assert caught.value.status == 404
    with pytest.raises(RemoteRequestError, match="/agent"):
        Session(agent_url=served.base_url, api_key=TOKEN)  # the root is no agent path


def test_store_errors_come_back_as_the_same_classes(served: SessionServer) -> None:
    session = remote(served, "typed")
    with pytest.raises(InvalidValueError, match="must be an int or float"):
        session.increment_state("n", "five")
    session.delete()
    with pytest.raises(SessionNotFoundError) as caught:
        session.get_state("anything")
    assert caught.value.session_id == "typed"
    answer = post(served.agent_url + "/store/patch", {"session_id": "x", "updates": [1]})
    assert answer.status_code == 400


@pytest.fixture
def served_alone(llm: ScriptedChatServer, tmp_path: Path) -> Iterator[SessionServer]:
    """A server of its own, for a test that encrypts its store (for good: see guard.py)."""
    with SessionServer(
        f"sqlite:///{tmp_path / 'sessions.db'}", llm_url=llm.url, token=TOKEN
    ) as server:
        yield server


@pytest.mark.slow
def test_a_server_without_the_key_hands_out_no_ciphertext_and_writes_nothing(
    served_alone: SessionServer,
) -> None:
    """The store routes call the backend below the store API: a server opened without an
    encryption key refuses an encrypted session there too, with the client's typed error."""
    served = served_alone
    key = base64.urlsafe_b64encode(b"r" * 32).decode()
    local = Session("sealed-here", "vera", store=served.store_url, settings={"encryption_key": key})
    local.set_state("secret", "pelican-77")
    local.append_messages("log", [{"role": "user", "content": "pelican-77"}])
    ids = {"session_id": "sealed-here", "user_id": "vera"}
    for operation, body in (
        ("get_state", {}),
        ("read_log", {"path": "log"}),
        ("patch", {"updates": {"secret": "plain"}}),
        ("increment", {"name": "n"}),
        ("append", {"write": {"path": "log", "messages": [{"content": "x"}], "start": -1}}),
        ("truncate_log", {"path": "log", "length": 0}),
    ):
        answer = post(f"{served.agent_url}/store/{operation}", {**ids, **body})
        assert answer.status_code == 409, (operation, answer.text)
        error = answer.json()["error"]
        assert error["type"] == "KeyRequiredError", operation
        assert error["fields"]["fingerprint"].startswith("key-"), operation
        assert "pelican" not in answer.text and "psenc" not in answer.text, operation
    with pytest.raises(KeyRequiredError):  # and a remote session gets the same class
        remote(served, "sealed-here", user_id="vera").read_messages("log")
    assert local.get_state("secret") == "pelican-77"  # nothing was written
    assert local.read_messages("log") == [{"role": "user", "content": "pelican-77"}]
    local.close()


def operations_sent(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The store operations a remote backend sends from now on, in order."""
    sent: list[str] = []
    call = RemoteBackend._call

    async def counted(self: RemoteBackend, operation: str, body: Any, **how: Any) -> Any:
        sent.append(operation)
        return await call(self, operation, body, **how)

    monkeypatch.setattr(RemoteBackend, "_call", counted)
    return sent


def test_a_session_is_created_with_its_modules_in_one_request(
    served: SessionServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``create_record_with_modules`` (ADK's create_session) is one request, one step of the
    server's store: a second is a ConflictError that changes nothing. A server older than the
    route (404) gets the protocol's default, the same record in three requests."""
    backend = remote(served).store.backend
    call = RemoteBackend._call
    sent = operations_sent(monkeypatch)

    def create(session_id: str, doc: Any) -> dict[str, int]:
        return asyncio.run(
            backend.create_record_with_modules(
                record_key(session_id, "carol"),
                metadata={"doc": doc},
                documents={"doc": doc},
                writes=[LogWrite("doc.log", [{"content": "hi"}], 0)],
            )
        )

    def stored(session_id: str) -> tuple[Any, Any]:
        key = record_key(session_id, "carol")
        info = asyncio.run(backend.read_record(key))
        return info and info.metadata, asyncio.run(backend.read_modules(key, names=["doc"]))

    made = ({"doc": {"v": 1}}, StoredModules({"doc": {"v": 1}}, {"doc.log": [{"content": "hi"}]}))
    assert create("made", {"v": 1}) == {"doc.log": 1}
    assert [op for op in sent if op != "info"] == ["create_with_modules"]
    with pytest.raises(ConflictError):
        create("made", {"v": 2})
    assert stored("made") == made

    async def older(self: RemoteBackend, operation: str, body: Any, **how: Any) -> Any:
        if operation == "create_with_modules":
            raise RemoteRequestError("Nothing at that path.", status=404)
        return await call(self, operation, body, **how)

    monkeypatch.setattr(RemoteBackend, "_call", older)
    assert create("older", {"v": 1}) == {"doc.log": 1}
    assert stored("older") == made
    with pytest.raises(ConflictError):
        create("older", {"v": 2})


def test_an_emptied_session_is_removed_in_one_request(
    served: SessionServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``delete_record_without_state`` (a LangGraph store's emptied namespace) is one request,
    checked and removed in one step of the server's store; a server older than the route
    (404) gets the protocol's default, a read and then a delete."""
    backend = remote(served).store.backend
    call = RemoteBackend._call
    sent = operations_sent(monkeypatch)
    key = record_key("emptied", "carol")

    def remove() -> bool:
        return asyncio.run(backend.delete_record_without_state(key))

    def fill(state: dict[str, Any]) -> None:
        asyncio.run(
            backend.patch_record_state(
                key, updates=state, deletes=[], replace=True, expected_version=None,
                must_exist=False,
            )
        )  # fmt: skip

    fill({"kept": 1})
    sent.clear()
    assert remove() is False  # it holds a key: kept
    assert asyncio.run(backend.read_record_state(key, names=None, must_exist=True)) == {"kept": 1}
    fill({})
    sent.clear()
    assert remove() is True
    assert [op for op in sent if op != "info"] == ["delete_without_state"]  # info: the guard's
    assert asyncio.run(backend.read_record(key)) is None
    assert remove() is False  # gone already

    async def older(self: RemoteBackend, operation: str, body: Any, **how: Any) -> Any:
        sent.append(operation)
        if operation == "delete_without_state":
            raise RemoteRequestError("Nothing at that path.", status=404)
        return await call(self, operation, body, **how)

    monkeypatch.setattr(RemoteBackend, "_call", older)
    fill({})
    sent.clear()
    assert remove() is True
    assert [op for op in sent if op != "info"] == ["delete_without_state", "get_state", "delete"]
    assert asyncio.run(backend.read_record(key)) is None


def test_a_lone_surrogate_round_trips_as_it_does_on_a_local_store(served: SessionServer) -> None:
    session = remote(served, "surrogates")
    text = "half a pair: \ud800, and a whole one: \U0001f600"
    session.set_state("text", text)
    session.append_messages("log", [{"role": "user", "content": text}])
    assert session.get_state("text") == text
    assert session.read_messages("log") == [{"role": "user", "content": text}]
    local = Session("surrogates", store="memory://")
    local.set_state("text", text)
    assert local.get_state("text") == session.get_state("text")


def test_counts_past_what_a_store_holds_are_400_not_500(served: SessionServer) -> None:
    session = remote(served, "counts")
    session.append_messages("log", [{"role": "user", "content": "hi"}])
    with pytest.raises(InvalidValueError, match="start"):
        session.read_messages("log", 2**63)
    with pytest.raises(InvalidValueError, match="message count"):
        session.fork("counts-fork", at_message=("log", 2**63))
    for body in (
        {"session_id": "counts", "path": "log", "start": 2**63},
        {"session_id": "counts", "path": "log", "start": 0, "stop": 2**64},
    ):
        answer = post(served.agent_url + "/store/read_log", body)
        assert answer.status_code == 400, answer.text
        assert answer.json()["error"]["type"] == "InvalidValueError"
    assert session.read_messages("log") == [{"role": "user", "content": "hi"}]


def test_a_factory_that_returns_no_agent_is_a_typed_server_error(served: SessionServer) -> None:
    answer = post(served.base_url + "/broken", {"query": "hi", "session_id": "b"})
    assert answer.status_code == 500
    assert answer.json()["error"]["type"] == "RemoteServerError"
    assert "not an Agent" in answer.json()["error"]["message"]
    session = Session(agent_url=served.base_url + "/broken", session_id="b", api_key=TOKEN)
    with pytest.raises(RemoteServerError, match="not an Agent"):
        session.chat("hi")


# -- the command -----------------------------------------------------------------------------


def _serve(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "praisonsession", "serve", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env=child_env(),
    )


def test_binding_beyond_loopback_without_a_token_is_refused(tmp_path: Path) -> None:
    done = _serve("--agent", "remote_agents:assistant", "--host", "0.0.0.0", cwd=tmp_path)
    assert done.returncode != 0
    assert "without a token" in done.stderr and "--token" in done.stderr


@pytest.mark.slow
def test_serve_says_what_is_wrong_with_an_agent_factory(tmp_path: Path) -> None:
    done = _serve("--agent", "no_such_module:factory", cwd=tmp_path)
    assert done.returncode != 0 and "Cannot import 'no_such_module'" in done.stderr
    done = _serve("--agent", "remote_agents", cwd=tmp_path)
    assert done.returncode != 0 and "not module:attr" in done.stderr
    done = _serve("--agent", "remote_agents:x", cwd=tmp_path)
    assert done.returncode != 0 and "no attribute 'x'" in done.stderr
    done = _serve("--agent", "remote_agents:assistant", "--agent", "remote_agents:x", cwd=tmp_path)
    assert done.returncode != 0 and "Two agents at '/agent'" in done.stderr


def test_importing_praisonsession_loads_no_server_or_cli_dependency() -> None:
    code = (
        "import sys, praisonsession\n"
        "print(sorted(m for m in ('fastapi', 'starlette', 'uvicorn', 'click', 'requests') "
        "if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=child_env()
    )
    assert done.stdout.strip() == "[]", done.stderr


# -- a PraisonAI-style server ------------------------------------------------------------------


class PraisonAIStyle(BaseHTTPRequestHandler):
    """What PraisonAI's ``Agent.launch`` answers: /health at the root only, a POST-only agent
    path that ignores session_id, no state routes."""

    conversation: ClassVar[list[str]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def _json(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path == "/health":
            self._json(200, {"status": "ok", "endpoints": ["/agent"]})
        else:
            self._json(404, {"detail": "Not Found"})

    def do_HEAD(self) -> None:
        self.send_response(405 if self.path == "/agent" else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path != "/agent":
            return self._json(404, {"detail": "Not Found"})
        self.conversation.append(body["query"])  # one conversation for every caller
        self._json(200, {"response": f"turn {len(self.conversation)}: {body['query']}"})


@pytest.fixture
def praisonai_style() -> Iterator[str]:
    PraisonAIStyle.conversation = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), PraisonAIStyle)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    yield f"127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()
    thread.join(timeout=5)


def test_our_client_chats_with_a_praisonai_style_server(praisonai_style: str) -> None:
    alice = Session(agent_url=praisonai_style + "/agent", session_id="alice")
    bob = Session(agent_url=praisonai_style + "/agent", session_id="bob")
    assert alice.chat("hi") == "turn 1: hi"  # /agent/health is 404, HEAD /agent 405: accepted
    assert bob.chat("hello") == "turn 2: hello"  # what is lost: one conversation for all
    with pytest.raises(RemoteRequestError, match="keeps no session state"):
        alice.set_state("k", 1)
    assert alice.open().session_id == "alice"  # nothing to open there, and no error
    assert "agent_url" in alice._repr_html_()  # a notebook shows it without asking for state
