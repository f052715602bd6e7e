"""Remote sessions that lose nothing: a turn whose answer was lost is applied once, many
clients on one session keep every turn, sessions do not wait for each other, and restarts and
outages give typed errors, never lost or doubled turns. On the real server subprocess, with the
scripted LLM behind it (see ``test_remote.py`` for the basics).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import socket
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from held import HungServer
from llm_server import ScriptedChatServer
from ports import closed_port
from praisonsession import (
    AsyncSession,
    InvalidValueError,
    RemoteConnectionError,
    RemoteError,
    Session,
    StoreUnavailableError,
)
from praisonsession._internal import runtime
from praisonsession.remote.client import MAX_ATTEMPTS, RETRIES
from redis_server import RedisServer
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
    wait_for,
)
from remote_server import TESTS, SessionServer

WORKERS = Path(__file__).with_name("remote_workers.py")


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
    assert agent.history[0]["metadata"]["turn_key"] == "k1" and agent.turns == 2
    assert set(agent.history[0]["metadata"]) == {"turn_key", "said_at"}
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
            env={**child_env(), "PYTHONPATH": str(TESTS.parent)},
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
    wait_for(slow_turn_at_the_llm)
    assert remote(served, "fast-one").chat("quick") == "You said: quick"
    assert not slow_done.is_set()  # the fast session finished while the slow one waited
    thread.join(timeout=60)
    assert slow_done.is_set()


# -- failures ------------------------------------------------------------------------------


def test_a_server_that_is_down_gives_a_typed_error_within_the_timeout() -> None:
    """Retried until the timeout, not past it: the retry policy's own bound (MAX_ATTEMPTS,
    with waits that add up to more than this timeout however they are jittered) is never the
    one that ends the call."""
    unjittered = RETRIES._replace(jitter=False)
    assert sum(unjittered.backoff(n) for n in range(1, MAX_ATTEMPTS)) / 2 > 0.5  # jitter: >= 1/2
    with closed_port() as port, pytest.raises(RemoteConnectionError) as caught:
        Session(agent_url=f"http://user:s3cret-pw@127.0.0.1:{port}/agent", timeout=0.5)
    message = str(caught.value)
    made = re.search(r"connection refused\); (\d+) attempts? in", message)
    assert made is not None and 1 <= int(made[1]) < MAX_ATTEMPTS, message
    assert f"127.0.0.1:{port}/agent" in message and "praisonsession serve" in message
    assert "s3cret-pw" not in message and "s3cret-pw" not in caught.value.url
    assert isinstance(caught.value, ConnectionError)  # what PraisonAI raises


@pytest.mark.slow
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
        wait_for(lambda: len(llm.chat_requests) > waiting)  # the turn is at the LLM
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
            # each is the server's answer once its retries of Redis ran out, not the end of the
            # client's timeout (15 s), which would raise OperationTimeoutError or say "no answer"
            with pytest.raises(StoreUnavailableError, match="Redis"):
                session.set_state("k", 2)
            with pytest.raises(StoreUnavailableError):
                session.chat("while down")
            answer = post(server.agent_url + "/store/get_state", {"session_id": "r"}, token=None)
            assert answer.status_code == 503
            assert answer.json()["error"]["type"] == "StoreUnavailableError"
            redis.start()
            assert session.get_state("k") == 1  # what was acknowledged is there
    finally:
        redis.stop()


def test_a_server_that_never_answers_gives_a_typed_error_within_the_timeout(
    hung_server: HungServer,
) -> None:
    """Closed after SAFETY, the server would give a connection error, not this one."""
    url = f"127.0.0.1:{hung_server.port}/agent"
    with pytest.raises(RemoteConnectionError, match="no answer within timeout=2 s"):
        Session(agent_url=url, timeout=2)

    async def on_a_loop() -> None:  # a notebook cell, an async app: the deadline is a timer
        async with AsyncSession("hung", agent_url=url, timeout=2):
            pass

    with pytest.raises(RemoteConnectionError, match="no answer within timeout=2 s"):
        asyncio.run(on_a_loop())
