"""Remote sessions on the real thing: ``python -m praisonsession serve`` as a subprocess on
127.0.0.1, our client against it, and the scripted LLM server behind it.

The server keeps one conversation per (user_id, session_id) in its store, so a restart
continues every conversation; a turn whose answer was lost is retried and applied once; many
clients on one session keep every turn; no request gets in without the token.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
import requests

from llm_server import Reply, ScriptedChatServer
from praisonsession import (
    AsyncSession,
    InvalidValueError,
    RemoteAuthError,
    RemoteConnectionError,
    RemoteError,
    RemoteModeError,
    RemoteRequestError,
    RemoteServerError,
    Session,
    SessionNotFoundError,
    StoreUnavailableError,
    runtime,
)
from praisonsession.agents.agent import module_key
from praisonsession.settings import Settings
from redis_server import RedisServer
from remote_server import TESTS, SessionServer, free_port

TOKEN = "test-token-0123456789abcdef"
HISTORY = module_key("Assistant") + ".history"
WORKERS = Path(__file__).with_name("remote_workers.py")


def slow_echo(request: dict[str, Any]) -> Reply:
    """Echo the last user message; ``slow:N:text`` answers after N seconds."""
    text = next(
        (m["content"] for m in reversed(request["messages"]) if m.get("role") == "user"), ""
    )
    delay = 0.0
    if text.startswith("slow:"):
        delay = float(text.split(":")[1])
    return Reply.text(f"You said: {text}", delay=delay)


@pytest.fixture(scope="module")
def llm() -> Iterator[ScriptedChatServer]:
    with ScriptedChatServer(slow_echo) as server:
        yield server


@pytest.fixture(autouse=True)
def llm_connections_end_with_the_test(request: pytest.FixtureRequest) -> Iterator[None]:
    """The server subprocess keeps its LLM connections open; their threads (in this process)
    end with each test, so that the suite's thread-leak check stays meaningful."""
    yield
    if "llm" in request.fixturenames:
        server = request.getfixturevalue("llm")
        if server._httpd is not None:
            server._httpd.close_connections()


@pytest.fixture(scope="module")
def served(
    llm: ScriptedChatServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SessionServer]:
    """One server for most tests: SQLite, a token, a 64 KiB body cap, three agent paths."""
    store = tmp_path_factory.mktemp("served") / "sessions.db"
    server = SessionServer(
        f"sqlite:///{store}",
        llm_url=llm.url,
        token=TOKEN,
        agents=(
            "remote_agents:assistant",
            "/async=remote_agents:async_assistant",
            "/broken=remote_agents:not_an_agent",
        ),
        args=("--max-body", "65536"),
    )
    with server:
        yield server


def remote(server: SessionServer, session_id: str = "chat", **options: Any) -> Session:
    options.setdefault("api_key", TOKEN)
    return Session(agent_url=server.agent_url, session_id=session_id, **options)


def post(url: str, body: Any, *, token: str | None = TOKEN, **headers: str) -> requests.Response:
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return requests.post(url, data=data, headers=headers, timeout=30)


def turns_of(history: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(user message, the reply that follows it) for each turn; asserts the shape."""
    pairs = []
    for user, reply in zip(history[::2], history[1::2], strict=True):
        assert user["role"] == "user" and reply["role"] == "assistant", (user, reply)
        pairs.append((user["content"], reply["content"]))
    return pairs


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
    session = AsyncSession("x", agent_url=f"127.0.0.1:{free_port()}/agent", timeout=2)
    assert session.is_remote  # nothing listens there, and nothing was tried yet
    with pytest.raises(RemoteConnectionError):
        asyncio.run(session.open())


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
    for body in (b'{"query": "unterminated', b"[1, 2]", {"session_id": "no-query"}, b"NaN"):
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


def test_a_factory_that_returns_no_agent_is_a_typed_server_error(served: SessionServer) -> None:
    answer = post(served.base_url + "/broken", {"query": "hi", "session_id": "b"})
    assert answer.status_code == 500
    assert answer.json()["error"]["type"] == "RemoteServerError"
    assert "not an Agent" in answer.json()["error"]["message"]
    session = Session(agent_url=served.base_url + "/broken", session_id="b", api_key=TOKEN)
    with pytest.raises(RemoteServerError, match="not an Agent"):
        session.chat("hi")


# -- a turn is applied once ----------------------------------------------------------------


def test_a_repeated_idempotency_key_is_answered_not_applied_again(served: SessionServer) -> None:
    body = {"query": "only once", "session_id": "idem", "user_id": "u"}
    first = post(served.agent_url, body, **{"Idempotency-Key": "key-1"})
    again = post(served.agent_url, body, **{"Idempotency-Key": "key-1"})
    other = post(served.agent_url, body, **{"Idempotency-Key": "key-2"})
    assert first.json()["response"] == again.json()["response"] == "You said: only once"
    assert other.status_code == 200
    history = remote(served, "idem", user_id="u").read_messages(HISTORY)
    assert [m["content"] for m in history if m["role"] == "user"] == ["only once", "only once"]
    assert [m["metadata"]["turn_key"] for m in history if m["role"] == "user"] == [
        "key-1",
        "key-2",
    ]


def test_an_agent_turn_with_a_key_runs_once_and_the_key_never_reaches_the_llm(
    server: ScriptedChatServer,
) -> None:
    session = Session("keys", store="memory://")
    agent = session.Agent("Keeper", memory=False, llm={"base_url": server.url, "model": "m"})
    assert runtime.run(agent.achat("hello", turn_key="k1")) == "You said: hello"
    assert runtime.run(agent.achat("hello", turn_key="k1")) == "You said: hello"
    assert len(server.chat_requests) == 1  # the second was answered from the history
    agent.chat("next")
    assert all("metadata" not in m for m in server.last_messages())  # stays local
    assert agent.history[0]["metadata"] == {"turn_key": "k1"} and agent.turns == 2
    with pytest.raises(InvalidValueError):
        runtime.run(agent.achat("hi", turn_key=""))


class LoseFirstAnswer:
    """A proxy on 127.0.0.1 that delivers requests to the server but, for the first request
    whose path ends with ``path``, throws the answer away and closes the connection: the
    client sees a dropped connection after the server applied its request."""

    def __init__(self, upstream_port: int, path: str) -> None:
        self.upstream_port = upstream_port
        self.path = path
        self.seen: list[str] = []
        self.dropped = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._threads: list[threading.Thread] = []
        self._sockets: list[socket.socket] = []
        self._accepting = threading.Thread(target=self._accept, daemon=True)
        self._accepting.start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            self._sockets.append(client)
            thread = threading.Thread(target=self._serve, args=(client,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _serve(self, client: socket.socket) -> None:
        with client, socket.create_connection(("127.0.0.1", self.upstream_port)) as upstream:
            reader = client.makefile("rb")
            upstream_reader = upstream.makefile("rb")
            while True:
                request = _read_http_message(reader)
                if request is None:
                    return
                path = request.split(b" ", 2)[1].decode()
                self.seen.append(path)
                upstream.sendall(request)
                answer = _read_http_message(upstream_reader)
                if answer is None:
                    return
                if path.endswith(self.path) and not self.dropped:
                    self.dropped += 1
                    return  # the answer is lost; the connection closes
                client.sendall(answer)

    def close(self) -> None:
        for sock in [self._listener, *self._sockets]:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)  # wakes a blocked accept() or read
        self._listener.close()
        self._accepting.join(timeout=5)
        for thread in self._threads:
            thread.join(timeout=5)


def _read_http_message(reader: Any) -> bytes | None:
    """One HTTP/1.1 request or response with a Content-Length body (what both ends send)."""
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        line = reader.readline()
        if not line:
            return None
        head += line
    length = 0
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    return head + reader.read(length)


@pytest.fixture
def lossy(served: SessionServer) -> Iterator[Any]:
    proxies: list[LoseFirstAnswer] = []

    def make(path: str) -> LoseFirstAnswer:
        proxies.append(LoseFirstAnswer(served.port, path))
        return proxies[-1]

    yield make
    for proxy in proxies:
        proxy.close()


def test_the_client_retries_a_turn_whose_answer_was_lost_and_it_is_applied_once(
    lossy: Any,
) -> None:
    proxy = lossy("/agent")
    session = Session(
        agent_url=f"http://127.0.0.1:{proxy.port}/agent", session_id="lost-answer", api_key=TOKEN
    )
    assert session.chat("are you there?") == "You said: are you there?"
    assert proxy.dropped == 1 and proxy.seen.count("/agent") == 2  # sent twice
    assert turns_of(session.read_messages(HISTORY)) == [
        ("are you there?", "You said: are you there?")
    ]


def test_an_increment_whose_answer_was_lost_is_not_repeated(lossy: Any) -> None:
    proxy = lossy("/store/increment")
    session = Session(
        agent_url=f"http://127.0.0.1:{proxy.port}/agent", session_id="lost-inc", api_key=TOKEN
    )
    with pytest.raises(RemoteConnectionError, match="may or may not have been applied"):
        session.increment_state("n")
    assert session.get_state("n") == 1  # applied once, not repeated
    assert proxy.seen.count("/agent/store/increment") == 1


# -- concurrency ---------------------------------------------------------------------------


def test_turns_from_many_threads_on_one_session_are_all_kept(served: SessionServer) -> None:
    session = remote(served, "threads")
    replies: dict[str, str] = {}

    def talk(worker: int) -> None:
        for turn in range(10):
            text = f"t{worker}-{turn}"
            replies[text] = session.chat(text)

    threads = [threading.Thread(target=talk, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert len(replies) == 80 and all(v == f"You said: {k}" for k, v in replies.items())
    pairs = turns_of(session.read_messages(HISTORY))
    assert sorted(pairs) == sorted((k, v) for k, v in replies.items())
    for worker in range(8):  # each thread's turns, in the order it sent them
        mine = [user for user, _ in pairs if user.startswith(f"t{worker}-")]
        assert mine == [f"t{worker}-{turn}" for turn in range(10)]


def test_four_processes_fifty_turns_each_on_ten_sessions_lose_and_duplicate_nothing(
    served: SessionServer,
) -> None:
    sessions = [f"proc-{i}" for i in range(10)]
    workers = [
        subprocess.Popen(
            [
                sys.executable,
                str(WORKERS),
                "chat",
                served.agent_url,
                TOKEN,
                f"w{w}",
                "50",
                *sessions,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**_env(), "PYTHONPATH": str(TESTS.parent)},
        )
        for w in range(4)
    ]
    for worker in workers:
        out, err = worker.communicate(timeout=300)
        assert worker.returncode == 0, err
        assert json.loads(out) == 50  # turns acknowledged
    sent: Counter[str] = Counter()
    for session_id in sessions:
        pairs = turns_of(remote(served, session_id).read_messages(HISTORY))
        for user, reply in pairs:
            assert reply == f"You said: {user}"
            assert user.split("-")[1] == session_id.split("-")[1]  # in the session it named
            sent[user] += 1
        for w in range(4):  # each worker's turns in its order
            mine = [int(u.split("-")[2]) for u, _ in pairs if u.startswith(f"w{w}-")]
            assert mine == sorted(mine)
    expected = {f"w{w}-{t % 10}-{t}" for w in range(4) for t in range(50)}
    assert set(sent) == expected and set(sent.values()) == {1}  # none lost, none twice


def test_sessions_do_not_wait_for_each_other(
    served: SessionServer, llm: ScriptedChatServer
) -> None:
    slow_done = threading.Event()

    def slow_turn() -> None:
        remote(served, "slow-one").chat("slow:3:take your time")
        slow_done.set()

    def slow_turn_at_the_llm() -> bool:
        return any("slow:3:take your time" in json.dumps(r.body) for r in list(llm.chat_requests))

    thread = threading.Thread(target=slow_turn)
    thread.start()
    _wait_for(slow_turn_at_the_llm)
    assert remote(served, "fast-one").chat("quick") == "You said: quick"
    assert not slow_done.is_set()  # the fast session finished while the slow one waited
    thread.join(timeout=60)
    assert slow_done.is_set()


# -- failures ------------------------------------------------------------------------------


def test_a_server_that_is_down_gives_a_typed_error_within_the_timeout() -> None:
    port = free_port()
    started = time.monotonic()
    with pytest.raises(RemoteConnectionError) as caught:
        Session(agent_url=f"http://user:s3cret-pw@127.0.0.1:{port}/agent", timeout=2)
    assert time.monotonic() - started < 3.5
    message = str(caught.value)
    assert f"127.0.0.1:{port}/agent" in message and "praisonsession serve" in message
    assert "s3cret-pw" not in message and "s3cret-pw" not in caught.value.url
    assert isinstance(caught.value, ConnectionError)  # what PraisonAI raises


def test_a_restart_between_turns_loses_no_acknowledged_turn(
    llm: ScriptedChatServer, tmp_path: Path
) -> None:
    server = SessionServer(f"sqlite:///{tmp_path / 's.db'}", llm_url=llm.url)
    with server:
        session = Session(agent_url=server.agent_url, session_id="durable")
        for text in ("one", "two", "three"):
            session.chat(text)
        keyed = {"query": "keyed", "session_id": "durable"}
        post(server.agent_url, keyed, token=None, **{"Idempotency-Key": "across-restart"})

        server.restart(hard=True)  # SIGKILL: no chance to flush anything
        assert session.chat("four") == "You said: four"  # the same client object goes on
        again = post(server.agent_url, keyed, token=None, **{"Idempotency-Key": "across-restart"})
        assert again.json()["response"] == "You said: keyed"  # answered, not applied again
        sent = [m["content"] for m in llm.last_messages() if m["role"] == "user"]
        assert sent == ["one", "two", "three", "keyed", "four"]  # the agent remembered

        thread_error: list[BaseException] = []

        def in_flight() -> None:
            try:
                Session(agent_url=server.agent_url, session_id="durable", timeout=4).chat(
                    "slow:3:never acknowledged"
                )
            except BaseException as exc:
                thread_error.append(exc)

        waiting = len(llm.chat_requests)
        thread = threading.Thread(target=in_flight)
        thread.start()
        _wait_for(lambda: len(llm.chat_requests) > waiting)  # the turn is at the LLM
        server.kill()
        thread.join(timeout=30)
        assert thread_error and isinstance(thread_error[0], RemoteError)
        server.start()
        history = Session(agent_url=server.agent_url, session_id="durable").read_messages(HISTORY)
        assert [user for user, _ in turns_of(history)] == ["one", "two", "three", "keyed", "four"]


def test_a_store_that_is_down_is_503_and_a_typed_error(llm: ScriptedChatServer) -> None:
    redis = RedisServer(durable=True).start()
    try:
        store = redis.url + "?retry_max_delay=0.3"  # the server gives up on Redis sooner
        server = SessionServer(store, llm_url=llm.url, args=("--timeout", "5"))
        with server:
            session = Session(agent_url=server.agent_url, session_id="r", timeout=15)
            assert session.chat("before") == "You said: before"
            session.set_state("k", 1)
            redis.kill()  # the store goes down (its append-only file keeps what it acknowledged)
            started = time.monotonic()
            with pytest.raises(StoreUnavailableError, match="Redis"):
                session.set_state("k", 2)
            with pytest.raises(StoreUnavailableError):
                session.chat("while down")
            assert time.monotonic() - started < 30  # two calls, each within its timeout
            answer = post(server.agent_url + "/store/get_state", {"session_id": "r"}, token=None)
            assert answer.status_code == 503
            assert answer.json()["error"]["type"] == "StoreUnavailableError"
            redis.start()
            assert session.get_state("k") == 1  # what was acknowledged is there
    finally:
        redis.stop()


def _wait_for(condition: Any, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.02)


# -- the command -----------------------------------------------------------------------------


def _env() -> dict[str, str]:
    import os

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS.parent), str(TESTS)])
    env.pop("PRAISONSESSION_REMOTE_TOKEN", None)
    return env


def _serve(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "praisonsession", "serve", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env=_env(),
    )


def test_binding_beyond_loopback_without_a_token_is_refused(tmp_path: Path) -> None:
    done = _serve("--agent", "remote_agents:assistant", "--host", "0.0.0.0", cwd=tmp_path)
    assert done.returncode != 0
    assert "without a token" in done.stderr and "--token" in done.stderr


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
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env())
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
