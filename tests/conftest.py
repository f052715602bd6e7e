"""Fixtures shared by the suite: stores per backend, real servers (Redis, Chroma, an LLM
stand-in), and the isolation every test gets (its own working directory, loopback only)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import backends
import held
from backends import CONFORMANCE_BACKENDS, PERSISTENT, RawAccess, make_store
from chroma_server import chroma_url  # noqa: F401 - shared fixture
from llm_server import ScriptedChatServer, isolate_llm_env, serving
from postgres_server import PostgresServer
from praisonsession import SessionBase, clock
from praisonsession._internal import runtime
from redis_server import RedisServer
from sessions import open_session  # noqa: F401 - shared fixture

#: The shipped conformance suite's assertions report their operands, as ours do.
pytest.register_assert_rewrite("praisonsession.stores.testing")


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """One redis-server (127.0.0.1, free port, no persistence) for the whole test session.

    Started only when a test needs it. Tests share it safely: each store gets a key prefix
    of its own (see ``backends.redis_prefix``).
    """
    server = RedisServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def redis_url(redis_server: RedisServer) -> str:
    """``redis://127.0.0.1:PORT/0`` of the test session's server (no key prefix)."""
    backends.REDIS_URL = redis_server.url
    return redis_server.url


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One PostgreSQL server (127.0.0.1, free port, temporary directory, run as ``nobody``
    when the tests run as root) for the whole test session.

    Started only when a test needs it. Tests share it safely: each store gets a schema of
    its own (see ``backends.postgres_schema``).
    """
    server = PostgresServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def postgres_url(postgres_server: PostgresServer) -> str:
    """``postgresql://postgres@127.0.0.1:PORT/postgres`` of the test session's server."""
    backends.POSTGRES_URL = postgres_server.url
    return postgres_server.url


def _open(kind: str, request: pytest.FixtureRequest, root: Path) -> SessionBase:
    if kind in backends.SERVERS:
        request.getfixturevalue(backends.SERVERS[kind])
    return make_store(kind, root)


@pytest.fixture(params=CONFORMANCE_BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SessionBase]:
    """Each kind of ``CONFORMANCE_BACKENDS`` in turn: the test runs once per kind."""
    store = _open(request.param, request, tmp_path)
    yield store
    runtime.run(store.close())


@pytest.fixture(params=PERSISTENT)
def persistent_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SessionBase]:
    """Backends whose stored bytes can be damaged or come from older versions."""
    store = _open(request.param, request, tmp_path)
    yield store
    runtime.run(store.close())


@pytest.fixture
def raw(persistent_store: SessionBase) -> RawAccess:
    return RawAccess(persistent_store)


@pytest.fixture(params=backends.LEGACY)
def legacy_raw(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RawAccess]:
    """Raw access to each backend AgentScope 1.0 also wrote sessions to."""
    store = _open(request.param, request, tmp_path)
    yield RawAccess(store)
    runtime.run(store.close())


@pytest.fixture
def frozen_clock() -> Iterator[clock.ManualClock]:
    """Time that moves only when the test says so: TTL tests advance it instead of sleeping
    (every store reads it, Redis included: the scripts take its time with each call)."""
    with clock.frozen() as now:
        yield now


@pytest.fixture
def hung_server() -> Iterator[held.HungServer]:
    """A server on 127.0.0.1 that accepts connections and never answers (for SAFETY s)."""
    with held.hung_server() as server:
        yield server


@pytest.fixture
def run():
    """Run a store coroutine to completion, the way the sync facade does."""
    return runtime.run


@pytest.fixture(autouse=True)
def no_thread_leaks() -> Iterator[None]:
    """A test may start the runtime's one loop thread, and nothing else that outlives it."""
    before = {t.ident for t in threading.enumerate()}
    yield

    def ours(thread: threading.Thread) -> bool:
        # the runtime's loop and its executor's idle workers (asyncio.to_thread) are reused;
        # tqdm keeps one monitor thread per process once a progress bar has been shown
        return thread.name in ("praisonsession-loop", "tqdm_monitor") or thread.name.startswith(
            "asyncio_"
        )

    leaked = [t for t in threading.enumerate() if t.ident not in before and not ours(t)]
    for thread in leaked:  # threads a test let go of end, however loaded the machine
        thread.join(timeout=held.SAFETY)
    leaked = [t for t in leaked if t.is_alive()]
    assert not leaked, f"threads leaked: {leaked}"


@pytest.fixture(autouse=True)
def isolated_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test in its own working directory (the default data directory is relative), with
    no LLM key or endpoint from the environment, and no HTTP request off this machine."""
    monkeypatch.chdir(tmp_path)
    isolate_llm_env(monkeypatch)
    for name in ("PRAISONSESSION_DATA_DIR", "PRAISONSESSION_STORE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server() -> Iterator[ScriptedChatServer]:
    """A strict chat-completions stand-in on 127.0.0.1: scripted replies must all be used."""
    with serving() as server:
        yield server
