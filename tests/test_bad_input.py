"""The bad-input catalogue: every public entry point refuses what it cannot use, with one exact,
typed error, and the store reads back exactly as it was.

Each row is one distinct mistake a user makes. Rows that touch a session run on every backend;
the others (constructors, settings, URLs) once. After each refusal the seeded session (its
state, version, message log and listing) must be unchanged, and the error's whole text, its
traceback and chained causes included, must not contain any of the secrets planted in the
inputs.
"""

from __future__ import annotations

import math
import os
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from backends import CONFORMANCE_BACKENDS, SERVERS, make_store
from praisonsession import (
    AsyncSession,
    DecryptionError,
    InvalidIdError,
    InvalidSettingError,
    InvalidValueError,
    JSONSession,
    KeyRequiredError,
    MessageLog,
    PraisonSessionError,
    RedisSession,
    Session,
    SessionBase,
    SqliteSession,
    StateModule,
    StoreUnavailableError,
    erase_user,
    open_store,
)
from praisonsession._internal import runtime
from praisonsession._internal.json_data import check_json_data, detach
from praisonsession.llm import LLMNotConfiguredError, LLMUnavailableError, resolve_llm
from praisonsession.settings import Settings
from praisonsession.stores import Key

PASSWORD = "hunter2-planted-password"
API_KEY = "sk-planted-api-key-0123456789"
SECRETS = (PASSWORD, API_KEY)


class Notes(StateModule):
    def __init__(self) -> None:
        super().__init__()
        self.log = MessageLog()


@dataclass(frozen=True)
class Case:
    """One mistake: ``call(session)`` must raise exactly ``error``."""

    name: str
    error: type[BaseException]
    call: Callable[[Session], Any]


def circular() -> list[Any]:
    value: list[Any] = [1]
    value.append(value)
    return value


def deep(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


def agent(session: Session, **options: Any) -> Any:
    return session.Agent("tutor", memory=False, **options)


# -- mistakes made on an open session (each runs on every backend) ---------------------------

SESSION_CASES = [
    Case("set_state: empty key", InvalidIdError, lambda s: s.set_state("", 1)),
    Case("set_state: key not a str", InvalidIdError, lambda s: s.set_state(5, 1)),
    Case("set_state: key with a NUL", InvalidIdError, lambda s: s.set_state("a\x00b", 1)),
    Case(
        "set_state: key with a lone surrogate", InvalidIdError, lambda s: s.set_state("\ud800", 1)
    ),
    Case("set_state: key too long", InvalidIdError, lambda s: s.set_state("k" * 1025, 1)),
    Case("set_state: an object", InvalidValueError, lambda s: s.set_state("k", object())),
    Case("set_state: a tuple", InvalidValueError, lambda s: s.set_state("k", (1, 2))),
    Case("set_state: a set", InvalidValueError, lambda s: s.set_state("k", {1, 2})),
    Case("set_state: bytes", InvalidValueError, lambda s: s.set_state("k", b"raw")),
    Case("set_state: NaN", InvalidValueError, lambda s: s.set_state("k", math.nan)),
    Case("set_state: infinity", InvalidValueError, lambda s: s.set_state("k", math.inf)),
    Case("set_state: -infinity nested", InvalidValueError, lambda s: s.set_state("k", [-math.inf])),
    Case("set_state: int of 4,500 digits", InvalidValueError, lambda s: s.set_state("k", 10**4500)),
    Case("set_state: dict with an int key", InvalidValueError, lambda s: s.set_state("k", {1: 2})),
    Case("set_state: circular list", InvalidValueError, lambda s: s.set_state("k", circular())),
    Case("set_state: nested 300 deep", InvalidValueError, lambda s: s.set_state("k", deep(300))),
    Case("save_state: a list", InvalidValueError, lambda s: s.save_state([1, 2])),
    Case("save_state: None", InvalidValueError, lambda s: s.save_state(None)),
    Case(
        "save_state: one bad value among good ones",
        InvalidValueError,
        lambda s: s.save_state({"fine": 1, "bad": object()}),
    ),
    Case("save_state: an int key", InvalidIdError, lambda s: s.save_state({7: "seven"})),
    Case("get_state: empty key", InvalidIdError, lambda s: s.get_state("")),
    Case("delete_state: key not a str", InvalidIdError, lambda s: s.delete_state(3)),
    Case(
        "increment_state: key holds text",
        InvalidValueError,
        lambda s: s.increment_state("text"),
    ),
    Case(
        "increment_state: amount as text", InvalidValueError, lambda s: s.increment_state("n", "1")
    ),
    Case("increment_state: amount True", InvalidValueError, lambda s: s.increment_state("n", True)),
    Case(
        "increment_state: amount NaN", InvalidValueError, lambda s: s.increment_state("n", math.nan)
    ),
    Case(
        "increment_state: amount infinite",
        InvalidValueError,
        lambda s: s.increment_state("n", math.inf),
    ),
    Case(
        "increment_state: default as text",
        InvalidValueError,
        lambda s: s.increment_state("fresh", 1, default="0"),
    ),
    Case(
        "increment_state: float overflow",
        InvalidValueError,
        lambda s: s.increment_state("huge", 1e308),
    ),
    Case(
        "increment_state: int past 4,000 digits",
        InvalidValueError,
        lambda s: s.increment_state("big", 9 * 10**3999),
    ),
    Case("touch: negative ttl", InvalidValueError, lambda s: s.touch(ttl=-5)),
    Case("touch: NaN ttl", InvalidValueError, lambda s: s.touch(ttl=math.nan)),
    Case("touch: ttl as text", InvalidValueError, lambda s: s.touch(ttl="60")),
    Case("list_sessions: limit 0", InvalidValueError, lambda s: s.list_sessions(limit=0)),
    Case("list_sessions: limit huge", InvalidValueError, lambda s: s.list_sessions(limit=10**6)),
    Case("list_sessions: after with NUL", InvalidIdError, lambda s: s.list_sessions(after="\x00")),
    Case("delete_session: empty id", InvalidIdError, lambda s: s.delete_session("")),
    Case(
        "append_messages: a str",
        InvalidValueError,
        lambda s: s.append_messages("log", "hello"),
    ),
    Case("append_messages: not dicts", InvalidValueError, lambda s: s.append_messages("log", [1])),
    Case(
        "append_messages: a dict, not a list",
        InvalidValueError,
        lambda s: s.append_messages("log", {"role": "user"}),
    ),
    Case(
        "append_messages: unserialisable content",
        InvalidValueError,
        lambda s: s.append_messages("log", [{"content": object()}]),
    ),
    Case(
        "append_messages: empty log name",
        InvalidIdError,
        lambda s: s.append_messages("", [{"role": "user"}]),
    ),
    Case("read_messages: negative start", InvalidValueError, lambda s: s.read_messages("log", -1)),
    Case(
        "read_messages: stop before start",
        InvalidValueError,
        lambda s: s.read_messages("log", 2, 1),
    ),
    Case("save_modules: a dict", InvalidValueError, lambda s: s.save_modules(notes={"x": 1})),
    Case(
        "save_modules: a dotted name", InvalidIdError, lambda s: s.save_modules(**{"a.b": Notes()})
    ),
    Case("save_modules: an empty name", InvalidIdError, lambda s: s.save_modules(**{"": Notes()})),
    Case(
        "save_modules: NUL in name", InvalidIdError, lambda s: s.save_modules(**{"a\x00": Notes()})
    ),
    Case(
        "save_modules: name too long",
        InvalidIdError,
        lambda s: s.save_modules(**{"m" * 1025: Notes()}),
    ),
    Case(
        "load_modules: a dotted name", InvalidIdError, lambda s: s.load_modules(**{"a.b": Notes()})
    ),
    Case("read_messages: start as text", InvalidValueError, lambda s: s.read_messages("log", "0")),
    Case("read_messages: start a float", InvalidValueError, lambda s: s.read_messages("log", 1.5)),
    Case("read_messages: start True", InvalidValueError, lambda s: s.read_messages("log", True)),
    Case(
        "read_messages: stop a float", InvalidValueError, lambda s: s.read_messages("log", 0, 2.0)
    ),
    Case("read_messages: start 2**63", InvalidValueError, lambda s: s.read_messages("log", 2**63)),
    Case(
        "read_messages: stop 2**64", InvalidValueError, lambda s: s.read_messages("log", 0, 2**64)
    ),
    Case(
        "fork: at_message count 2**63",
        InvalidValueError,
        lambda s: s.fork("forked", at_message=("log", 2**63)),
    ),
    Case(
        "fork: at_message count 2**64, to another user",
        InvalidValueError,
        lambda s: s.fork("forked", at_message=("log", 2**64), user_id="other"),
    ),
    Case("load_modules: an int", InvalidValueError, lambda s: s.load_modules(notes=5)),
    Case("add_memory: empty text", InvalidValueError, lambda s: s.add_memory("  ")),
    Case("add_memory: text not a str", InvalidValueError, lambda s: s.add_memory(42)),
    Case("add_memory: unknown type", InvalidValueError, lambda s: s.add_memory("x", "medium")),
    Case("search_memory: limit 0", InvalidValueError, lambda s: s.search_memory("q", limit=0)),
    Case(
        "search_memory: limit True", InvalidValueError, lambda s: s.search_memory("q", limit=True)
    ),
    Case("search_memory: unknown type", InvalidValueError, lambda s: s.search_memory("q", "x")),
    Case("search_knowledge: empty query", InvalidValueError, lambda s: s.search_knowledge("")),
    Case("index_turns: before None", InvalidValueError, lambda s: s.index_turns("log", None)),
    Case("index_turns: log not a str", InvalidValueError, lambda s: s.index_turns(5, 2)),
    Case(
        "recall_turns: before a str", InvalidValueError, lambda s: s.recall_turns("log", "q", "2")
    ),
    Case("recall_turns: limit -1", InvalidValueError, lambda s: s.recall_turns("log", "q", 2, -1)),
    Case("get_context: max_items 0", InvalidValueError, lambda s: s.get_context("q", 0)),
    Case("clear_memory: unknown type", InvalidValueError, lambda s: s.clear_memory("sometimes")),
    Case("Agent: unknown option", InvalidValueError, lambda s: agent(s, foo=1)),
    Case("Agent: empty name", InvalidIdError, lambda s: s.Agent("")),
    Case("Agent: llm not a str or dict", InvalidValueError, lambda s: agent(s, llm=5)),
    Case("Agent: llm model empty", InvalidValueError, lambda s: agent(s, llm={"model": ""})),
    Case(
        "Agent: llm base_url not http",
        InvalidValueError,
        lambda s: agent(s, llm={"model": "m", "base_url": "ftp://host/v1"}),
    ),
    Case(
        "Agent: misspelt llm option",
        InvalidValueError,
        lambda s: agent(s, llm={"model": "m", "temprature": 0}),
    ),
    Case("Agent: negative history", InvalidValueError, lambda s: agent(s, history_window=-1)),
    Case("Agent: a tool that is not a function", InvalidValueError, lambda s: agent(s, tools=[5])),
    Case("chat: message not a str", InvalidValueError, lambda s: agent(s).chat(5)),
    Case("chat: no LLM configured anywhere", LLMNotConfiguredError, lambda s: agent(s).chat("hi")),
    Case(
        "chat: endpoint down, password and key planted",
        LLMUnavailableError,
        lambda s: agent(
            s,
            llm={
                "model": "m",
                "base_url": f"http://user:{PASSWORD}@127.0.0.1:9/v1",
                "api_key": API_KEY,
                "max_retries": 0,
            },
        ).chat("hi"),
    ),
]

# -- mistakes made before there is a session (run once each) ----------------------------------


def fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def exported(root: Path, destination: Callable[[], Path]) -> Any:
    """Export a small session to ``destination``; what was there before must still be there,
    and no partial file may be left beside it."""
    target = destination()
    before = sorted(p.name for p in target.parent.iterdir()) if target.parent.is_dir() else None
    kind = target.stat().st_mode if target.exists() else None
    session = Session("s", "u", store="memory://")
    session.append_messages("log", [{"role": "user", "content": "hi"}])
    try:
        return session.export(target)
    finally:
        if before is not None:
            assert sorted(p.name for p in target.parent.iterdir()) == before
        assert (target.stat().st_mode if target.exists() else None) == kind


def session_with(**options: Any) -> Callable[[Path], Any]:
    return lambda root: Session("s", "u", store=f"sqlite://{root}/s.db", **options)


SEALING_KEY = "c2VhbGluZy1rZXktb2YtdGhpcnR5LXR3by1ieXRlcyE="  # 32 bytes, urlsafe base64
OTHER_SEALING_KEY = "b3RoZXIta2V5LW9mLWV4YWN0bHktMzItYnl0ZXMtISE="


def vault(root: Path) -> str:
    """A store holding an encrypted session ("vault" of "owner"); its URL."""
    url = f"sqlite://{root}/vault/s.db"
    sealed = Session("vault", "owner", store=url, settings={"encryption_key": SEALING_KEY})
    sealed.set_state("secret", PASSWORD)
    sealed.append_messages("log", [{"role": "user", "content": PASSWORD}])
    sealed.close()
    return url


def without_the_key(work: Callable[[SessionBase], Any]) -> Callable[[Path], Any]:
    """``work`` on the vault through a store opened without its key: refused, nothing written."""

    def call(root: Path) -> Any:
        store = open_store(vault(root))
        try:
            return runtime.run(work(store))
        finally:
            runtime.run(store.close())
            sealed = Session("vault", "owner", store=f"sqlite://{root}/vault/s.db",
                             settings={"encryption_key": SEALING_KEY})  # fmt: skip
            assert sealed.get_state("secret") == PASSWORD  # still whole, and still opens
            assert sealed.read_messages("log") == [{"role": "user", "content": PASSWORD}]
            sealed.close()

    return call


GLOBAL_CASES = [
    Case(
        "Session: an encrypted session opened without the key, its secret planted",
        KeyRequiredError,
        lambda r: Session("vault", "owner", store=vault(r)),
    ),
    Case(
        "Session: an encrypted session opened with another key, its secret planted",
        DecryptionError,
        lambda r: Session(
            "vault", "owner", store=vault(r), settings={"encryption_key": OTHER_SEALING_KEY}
        ).get_state("secret"),
    ),
    Case(
        "store: a write into an encrypted session without the key",
        KeyRequiredError,
        without_the_key(lambda store: store.patch_state("vault", "owner", {"secret": "plain"})),
    ),
    Case(
        "store: an append to an encrypted session without the key",
        KeyRequiredError,
        without_the_key(
            lambda store: store.append_messages("vault", "owner", "log", [{"content": "x"}])
        ),
    ),
    Case(
        "store: a read of an encrypted session without the key (no ciphertext as a value)",
        KeyRequiredError,
        without_the_key(lambda store: store.get_state("vault", "owner")),
    ),
    Case(
        "store: a read of an encrypted session narrowed by a field, without the key",
        KeyRequiredError,
        without_the_key(
            lambda store: store.backend.read_record_state_matching(
                Key("owner", "vault"), fields=[(("value", "n"), 1)], must_exist=False
            )
        ),
    ),
    Case(
        "store: state updates that are no dict",
        InvalidValueError,
        without_the_key(lambda store: store.patch_state("vault", "owner", "secret")),
    ),
    Case(
        "store: keys to delete given as one str",
        InvalidValueError,
        without_the_key(lambda store: store.patch_state("vault", "owner", delete="secret")),
    ),
    Case(
        "store: replace not a bool",
        InvalidValueError,
        without_the_key(lambda store: store.patch_state("vault", "owner", {}, replace="yes")),
    ),
    Case("Session: empty session_id", InvalidIdError, lambda r: Session("", store="memory://")),
    Case("Session: session_id an int", InvalidIdError, lambda r: Session(123, store="memory://")),
    Case(
        "Session: session_id 257 chars",
        InvalidIdError,
        lambda r: Session("x" * 257, store="memory://"),
    ),
    Case(
        "Session: session_id with newline",
        InvalidIdError,
        lambda r: Session("a\nb", store="memory://"),
    ),
    Case("Session: user_id an int", InvalidIdError, lambda r: Session("s", 5, store="memory://")),
    Case(
        "Session: user_id lone surrogate",
        InvalidIdError,
        lambda r: Session("s", "\udfff", store="memory://"),
    ),
    Case("Session: negative ttl", InvalidValueError, session_with(session_ttl=-5)),
    Case("Session: NaN ttl", InvalidValueError, session_with(session_ttl=math.nan)),
    Case("Session: infinite ttl", InvalidValueError, session_with(session_ttl=math.inf)),
    Case("Session: ttl as text", InvalidValueError, session_with(session_ttl="3600")),
    Case("Session: ttl True", InvalidValueError, session_with(session_ttl=True)),
    Case("Session: timeout 0", InvalidValueError, session_with(timeout=0)),
    Case("Session: timeout NaN", InvalidValueError, session_with(timeout=math.nan)),
    Case("Session: timeout infinite", InvalidValueError, session_with(timeout=math.inf)),
    Case("Session: timeout as text", InvalidValueError, session_with(timeout="30")),
    Case("memory_config: not a dict", InvalidValueError, session_with(memory_config="chroma")),
    Case(
        "memory_config: misspelt key",
        InvalidValueError,
        session_with(memory_config={"embeder": "minilm"}),
    ),
    Case(
        "memory_config: unknown embedder",
        InvalidValueError,
        session_with(memory_config={"embedder": "bogus"}),
    ),
    Case(
        "memory_config: embedder an int",
        InvalidValueError,
        session_with(memory_config={"embedder": 5}),
    ),
    Case(
        "memory_config: context_chars negative",
        InvalidValueError,
        session_with(memory_config={"context_chars": -1}),
    ),
    Case(
        "memory_config: provider mem0",
        InvalidValueError,
        session_with(memory_config={"provider": "mem0"}),
    ),
    Case(
        "memory_config: vector store URL not http, password planted",
        InvalidValueError,
        session_with(memory_config={"vector_store_url": f"chroma://u:{PASSWORD}@h"}),
    ),
    Case(
        "knowledge_config: chunk_size text",
        InvalidValueError,
        session_with(knowledge_config={"chunk_size": "x"}),
    ),
    Case(
        "knowledge_config: chunk_size tiny",
        InvalidValueError,
        session_with(knowledge_config={"chunk_size": 10}),
    ),
    Case(
        "knowledge_config: overlap too big",
        InvalidValueError,
        session_with(knowledge_config={"chunk_overlap": 500}),
    ),
    Case(
        "knowledge_config: unknown scope",
        InvalidValueError,
        session_with(knowledge_config={"scope": "team"}),
    ),
    Case(
        "knowledge_config: another vector store",
        InvalidValueError,
        session_with(knowledge_config={"vector_store": {"provider": "qdrant"}}),
    ),
    Case(
        "settings: misspelt name",
        InvalidSettingError,
        session_with(settings={"store_ur": "memory://"}),
    ),
    Case(
        "settings: negative default_ttl",
        InvalidSettingError,
        session_with(settings={"default_ttl": -5}),
    ),
    Case("settings: timeout 0", InvalidSettingError, session_with(settings={"timeout": 0})),
    Case(
        "settings: unknown durability",
        InvalidSettingError,
        session_with(settings={"durability": "disk"}),
    ),
    Case(
        "settings: empty llm_model", InvalidSettingError, session_with(settings={"llm_model": ""})
    ),
    Case(
        "settings: api key not a str, key planted",
        InvalidSettingError,
        session_with(settings={"llm_api_key": [API_KEY]}),
    ),
    Case("settings: not a dict", InvalidValueError, session_with(settings="store_url=memory://")),
    Case("store: an int", InvalidValueError, lambda r: Session("s", store=5)),
    Case("store: unknown scheme", InvalidValueError, lambda r: Session("s", store="nosuch://x")),
    Case("store: not a URL", InvalidValueError, lambda r: Session("s", store="sessions.db")),
    Case(
        "store: sqlite URL without a path",
        InvalidValueError,
        lambda r: Session("s", store="sqlite://"),
    ),
    Case(
        "store: JSON under a file",
        StoreUnavailableError,
        lambda r: Session("s", store="json:///dev/null/x"),
    ),
    Case(
        "store: SQLite under a file",
        StoreUnavailableError,
        lambda r: Session("s", store="sqlite:///dev/null/x.db"),
    ),
    Case(
        "store: redis port not a number, password planted",
        InvalidValueError,
        lambda r: Session("s", store=f"redis://:{PASSWORD}@127.0.0.1:port/0"),
    ),
    Case(
        "store: redis db not a number",
        InvalidValueError,
        lambda r: open_store("redis://127.0.0.1:6379/x"),
    ),
    Case("JSONSession: three positionals", InvalidValueError, lambda r: JSONSession("a", "b", "c")),
    Case("SqliteSession: :memory:", InvalidValueError, lambda r: SqliteSession(":memory:")),
    Case(
        "SqliteSession: two paths",
        InvalidValueError,
        lambda r: SqliteSession(r / "a.db", sqlite_path=r / "b.db"),
    ),
    Case("SqliteSession: no path", InvalidValueError, lambda r: SqliteSession()),
    Case(
        "RedisSession: zero attempts", InvalidValueError, lambda r: RedisSession(retry_attempts=0)
    ),
    Case(
        "unbound store: save without a session id",
        InvalidIdError,
        lambda r: runtime.run(JSONSession(r / "j").save_session_state(notes=Notes())),
    ),
    Case(
        "bound AgentScope file: session id that leaves save_dir",
        InvalidIdError,
        lambda r: JSONSession("../escape", r / "j").save_path,
    ),
    Case("AsyncSession: timeout negative", InvalidValueError, lambda r: AsyncSession(timeout=-1)),
    Case(
        "export: to a directory",
        InvalidValueError,
        lambda r: exported(r, lambda: r),
    ),
    Case(
        "export: into a directory that does not exist",
        InvalidValueError,
        lambda r: exported(r, lambda: r / "missing" / "a.jsonl"),
    ),
    Case(
        "export: to a FIFO",
        InvalidValueError,
        lambda r: exported(r, lambda: fifo(r / "pipe")),
    ),
    Case(
        "export: to a device",
        InvalidValueError,
        lambda r: exported(r, lambda: Path("/dev/null")),
    ),
    Case(
        "import_archive: a directory",
        InvalidValueError,
        lambda r: Session.import_archive(r, store="memory://"),
    ),
    Case(
        "import_archive: a FIFO",
        InvalidValueError,
        lambda r: Session.import_archive(fifo(r / "pipe"), store="memory://"),
    ),
    Case(
        "erase_user: None (would be the default user)",
        InvalidIdError,
        lambda r: erase_user(None, store=f"sqlite://{r}/s.db"),
    ),
    Case(
        "store: redis URL with an unknown option",
        InvalidValueError,
        lambda r: open_store("redis://127.0.0.1:9/0?bogus=1"),
    ),
    Case(
        "store: redis socket_timeout not a number",
        InvalidValueError,
        lambda r: open_store("redis://127.0.0.1:9/0?socket_timeout=abc"),
    ),
    Case(
        "store: sqlite busy_timeout negative",
        InvalidValueError,
        lambda r: open_store(f"sqlite://{r}/s.db?busy_timeout=-5"),
    ),
    Case(
        "SqliteSession: busy_timeout NaN",
        InvalidValueError,
        lambda r: SqliteSession(r / "s.db", busy_timeout=math.nan),
    ),
    Case(
        "JSONSession: lock_timeout NaN",
        InvalidValueError,
        lambda r: JSONSession(r / "j", lock_timeout=math.nan),
    ),
    Case(
        "JSONSession: lock_timeout -1",
        InvalidValueError,
        lambda r: JSONSession(r / "j", lock_timeout=-1),
    ),
    Case(
        "settings: store_url a list, password planted",
        InvalidSettingError,
        lambda r: Settings(store_url=[f"redis://u:{PASSWORD}@h/0"]),
    ),
    Case(
        "store: user:password@host without a scheme",
        InvalidValueError,
        lambda r: open_store(f"u:{PASSWORD}@h"),
    ),
    Case(
        "Agent: api key read from a file with a non-Latin-1 character, key planted",
        InvalidValueError,
        lambda r: resolve_llm({"model": "m", "api_key": API_KEY + "\u2013"}, None),
    ),
    Case(
        "Session: agent_url token and another api_key, key planted",
        InvalidValueError,
        lambda r: Session(
            "s", agent_url=f"http://127.0.0.1:9/agent?token={API_KEY}", api_key="x" * 8
        ),
    ),
]

# -- environment variables -------------------------------------------------------------------

ENV_CASES = [
    ("PRAISONSESSION_DEFAULT_TTL", "abc"),
    ("PRAISONSESSION_DEFAULT_TTL", "-1"),
    ("PRAISONSESSION_TIMEOUT", "soon"),
    ("PRAISONSESSION_SLIDING_TTL", "perhaps"),
    ("PRAISONSESSION_DURABILITY", "disk"),
    ("PRAISONSESSION_STORE_URLL", "memory://"),
]


# -- the checks ------------------------------------------------------------------------------


def assert_no_secret(error: BaseException) -> None:
    text = "".join(traceback.format_exception(error))
    leaked = [secret for secret in SECRETS if secret in text]
    assert not leaked, f"{type(error).__name__} shows a secret:\n{text}"


def raised_by(call: Callable[[], Any], expected: type[BaseException]) -> BaseException:
    with pytest.raises(PraisonSessionError) as caught:
        call()
    error = caught.value
    assert type(error) is expected, f"{type(error).__name__}: {error}"
    assert str(error), "an error must say what was wrong"
    assert_no_secret(error)
    return error


@pytest.fixture(params=CONFORMANCE_BACKENDS)
def seeded(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Session]:
    """A session with state, a number near the float limit, a big int and a message log."""
    if request.param in SERVERS:
        request.getfixturevalue(SERVERS[request.param])
    store = make_store(request.param, tmp_path)
    session = Session("s", "u", store=store, settings={"data_dir": str(tmp_path / "data")})
    session.save_state({"a": 1, "text": "hello", "huge": 1e308, "big": 10**3999, "n": 3})
    session.append_messages("log", [{"role": "user", "content": "hi"}])
    yield session
    session.close()
    runtime.run(store.close())


def snapshot(session: Session) -> Any:
    info = session.get_info()
    return (
        session.restore_state(),
        None if info is None else (info.version, info.ttl),
        session.read_messages("log"),
        [i.session_id for i in session.list_sessions()],
    )


@pytest.mark.parametrize("case", SESSION_CASES, ids=lambda case: case.name)
def test_a_bad_call_on_a_session_is_refused_and_changes_nothing(
    case: Case, seeded: Session
) -> None:
    before = snapshot(seeded)
    raised_by(lambda: case.call(seeded), case.error)
    assert snapshot(seeded) == before


@pytest.mark.parametrize("case", GLOBAL_CASES, ids=lambda case: case.name)
def test_a_bad_argument_is_refused_before_anything_is_stored(case: Case, tmp_path: Path) -> None:
    raised_by(lambda: case.call(tmp_path), case.error)
    assert not (tmp_path / "s.db").exists()  # nothing was created


@pytest.mark.parametrize(("variable", "value"), ENV_CASES, ids=[v for v, _ in ENV_CASES])
def test_a_bad_environment_variable_is_named(
    variable: str, value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(variable, value)
    error = raised_by(lambda: Session("s", store="memory://"), InvalidSettingError)
    assert variable in str(error)


def test_a_dot_env_file_that_is_not_utf8_is_named_without_its_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_bytes(f"PRAISONSESSION_LLM_API_KEY={API_KEY}\xe9\n".encode("latin-1"))
    error = raised_by(lambda: Session("s", store="memory://"), InvalidSettingError)
    assert ".env" in str(error) and "UTF-8" in str(error)


def test_a_misspelt_setting_suggests_the_right_name() -> None:
    error = raised_by(lambda: Session("s", settings={"store_ur": "memory://"}), InvalidSettingError)
    assert "'store_url'" in str(error)


def test_keys_to_delete_given_as_one_str_are_refused_not_taken_for_its_letters() -> None:
    """``patch_state(..., delete="name")`` deleted the keys "n", "a", "m" and "e" and kept
    "name": a str is refused, and every key stays."""
    store = open_store("memory://")
    state = {"name": "Ada", "n": 1, "a": 2, "m": 3, "e": 4}
    runtime.run(store.patch_state("s", "u", state))
    with pytest.raises(InvalidValueError, match="delete=\\['name'\\]"):
        runtime.run(store.patch_state("s", "u", delete="name"))  # type: ignore[arg-type]
    assert runtime.run(store.get_state("s", "u")) == state
    runtime.run(store.patch_state("s", "u", delete=(k for k in ("n", "a"))))  # any iterable
    assert runtime.run(store.get_state("s", "u")) == {"name": "Ada", "m": 3, "e": 4}


def test_the_catalogue_is_as_large_as_promised() -> None:
    distinct = {case.name for case in SESSION_CASES + GLOBAL_CASES} | {v for v, _ in ENV_CASES}
    assert len(distinct) >= 60 + 60  # at least sixty on sessions, sixty before one


# -- the planted secrets stay out of what is shown -----------------------------------------


def test_no_secret_in_reprs_of_what_holds_one(tmp_path: Path, redis_url: str) -> None:
    from praisonsession.llm import resolve_llm
    from praisonsession.settings import Settings

    settings = Settings(llm_api_key=API_KEY, llm_base_url=f"http://u:{PASSWORD}@h/v1")
    config = resolve_llm(None, settings)
    port = redis_url.rsplit(":", 1)[1].split("/")[0]
    store = open_store(f"redis://:{PASSWORD}@127.0.0.1:{port}/0")
    shown = " ".join(map(repr, (settings, config, store))) + store.url
    assert not [secret for secret in SECRETS if secret in shown], shown
    runtime.run(store.close())


def test_no_secret_when_a_knowledge_url_fails(tmp_path: Path) -> None:
    session = Session("s", store=f"sqlite://{tmp_path}/s.db", settings={"data_dir": str(tmp_path)})
    from praisonsession import KnowledgeSourceError

    raised_by(
        lambda: session.add_knowledge(f"http://reader:{PASSWORD}@127.0.0.1:9/page.html"),
        KnowledgeSourceError,
    )


def test_no_secret_when_a_redis_server_with_a_password_is_down() -> None:
    url = f"redis://:{PASSWORD}@127.0.0.1:9/0?retry_max_delay=0.1"
    raised_by(lambda: Session("s", store=url), StoreUnavailableError)


def test_no_secret_when_a_chroma_server_with_a_password_is_down(tmp_path: Path) -> None:
    session = Session(
        "s",
        store=f"sqlite://{tmp_path}/s.db",
        memory_config={"vector_store_url": f"http://u:{PASSWORD}@127.0.0.1:9"},
    )
    with pytest.raises(PraisonSessionError) as caught:
        session.search_memory("anything")
    assert_no_secret(caught.value)


def test_store_base_class_refuses_an_unbound_load_too(tmp_path: Path) -> None:
    store: SessionBase = SqliteSession(tmp_path / "s.db")
    raised_by(lambda: runtime.run(store.load_session_state(notes=Notes())), InvalidIdError)


class Text(str):
    pass


class Fields(dict):  # type: ignore[type-arg]
    pass


#: Values every copying entry point (state, metadata, messages, modules) takes or refuses.
DETACHED = {
    "plain message": {"role": "user", "content": "hi ☀", "n": 3, "x": 0.5, "on": True, "no": None},
    "nested lists": {"a": [1, "b", [2.5, {"c": [None, False]}]], "d": {}},
    "a str subclass": {"s": Text("kept")},
    "a dict subclass": Fields(a=[1]),
    "an int of 3,999 digits": {"n": 10**3998},
    "an int of 4,001 digits": {"n": 10**4000},
    "a lone surrogate": {"s": "\ud800"},
    "NaN": {"x": [math.nan]},
    "infinity": {"x": -math.inf},
    "an int key": {1: "a"},
    "a tuple": {"t": (1, 2)},
    "itself": {"c": circular()},
    "199 levels": deep(199),
    "200 levels": deep(200),
    "a set deep down": {"a": [{"b": {1, 2}}]},
}


@pytest.mark.parametrize("value", DETACHED.values(), ids=DETACHED.keys())
def test_a_value_is_copied_or_refused_exactly_as_the_full_check_says(value: Any) -> None:
    """``detach`` copies the plain values callers pass in one walk and leaves the rest to the
    full check: what it takes, refuses and says is the full check's, whichever way it went."""
    try:
        check_json_data(value, "value")
    except InvalidValueError as exc:
        with pytest.raises(InvalidValueError) as caught:
            detach(value, "value")
        assert str(caught.value) == str(exc)
        return
    copy = detach(value, "value")
    assert copy == value
    shared = containers(value) & containers(copy)
    assert not shared, "the copy shares a list or dict with the caller's value"


def containers(value: Any) -> set[int]:
    """The ids of every list and dict in ``value``."""
    found: set[int] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, (list, dict)):
            found.add(id(item))
            stack.extend(item.values() if isinstance(item, dict) else item)
    return found
