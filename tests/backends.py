"""Every backend by name, and raw access under a store's API to damage or age its data."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from counting_store import CountingBackend
from praisonsession import InMemorySession, JSONSession, SessionBase, SqliteSession
from praisonsession._internal.identifiers import DEFAULT_USER, filename_for
from praisonsession.stores.api import Key
from praisonsession.stores.guard import beneath

BACKENDS = ["memory", "json", "sqlite"]  # the facade tests (test_session.py) run on these
STORE_BACKENDS = [*BACKENDS, "redis", "postgres"]  # every backend, each with a URL
#: Every backend, a wrapper that uses only the public backend protocol (``counting_store.py``,
#: over SQLite) and encryption: the kinds the ``store`` fixture runs a test on, and the
#: conformance suite's (``test_store_conformance.py``).
CONFORMANCE_BACKENDS = [*STORE_BACKENDS, "wrapped", "encrypted"]
PERSISTENT = ["json", "sqlite", "redis", "postgres"]
SHARED = ["json", "sqlite", "redis", "postgres"]  # stores many processes open by URL
LEGACY = ["json", "sqlite", "redis"]  # where AgentScope 1.0 kept sessions (it has no PostgreSQL)
SERVERS = {"redis": "redis_url", "postgres": "postgres_url"}  # the fixture each kind needs
#: The key of the "encrypted" backend (an EncryptedStore over a JSON store).
ENCRYPTION_KEY = "bXktdGVzdC1rZXktb2YtMzItYnl0ZXMtZXhhY3RseSE="

#: The test session's redis-server (``redis://127.0.0.1:PORT/0``), set by the ``redis_url``
#: fixture in conftest.py before any redis store is made.
REDIS_URL: str | None = None
#: The test session's PostgreSQL (``postgresql://postgres@127.0.0.1:PORT/postgres``), set by
#: the ``postgres_url`` fixture in conftest.py before any postgres store is made.
POSTGRES_URL: str | None = None


def redis_prefix(root: Path) -> str:
    """A key prefix of its own for every test directory, so tests never see each other."""
    return "t-" + hashlib.sha1(str(root).encode()).hexdigest()[:16] + ":"


def redis_store_url(root: Path) -> str:
    if REDIS_URL is None:
        raise RuntimeError("no redis-server: request the redis_url fixture first")
    return f"{REDIS_URL}?key_prefix={redis_prefix(root)}"


def postgres_schema(root: Path) -> str:
    """A schema of its own for every test directory, so tests never see each other."""
    return "t_" + hashlib.sha1(str(root).encode()).hexdigest()[:16]


def postgres_store_url(root: Path) -> str:
    if POSTGRES_URL is None:
        raise RuntimeError("no PostgreSQL server: request the postgres_url fixture first")
    return f"{POSTGRES_URL}?schema={postgres_schema(root)}"


def store_url(kind: str, root: Path) -> str:
    """A URL of a fresh store of a kind that many processes can share, under ``root``."""
    if kind == "redis":
        return redis_store_url(root)
    if kind == "postgres":
        return postgres_store_url(root)
    return f"json://{root}/j" if kind == "json" else f"sqlite://{root}/s.db"


def worker_name(root: Path, n: int) -> str:
    """A name for the connections of worker ``n`` of the test in ``root`` (short: PostgreSQL
    cuts an application_name at 63 bytes)."""
    return f"w{hashlib.sha1(str(root).encode()).hexdigest()[:8]}-{n}"


def naming_connections(url: str, name: str) -> str:
    """``url`` whose connections carry ``name`` on their server (PostgreSQL's
    ``application_name``, Redis's client name), so ``wait_until_disconnected`` finds them;
    a file store's URL as it is."""
    option = {"postgresql": "application_name", "redis": "client_name"}.get(url.split(":")[0])
    if option is None:
        return url
    return f"{url}{'&' if '?' in url else '?'}{option}={name}"


def connections_named(url: str, name: str) -> int | None:
    """How many connections named ``name`` (``naming_connections``) the store's server has
    open; None for a file store, which has no server."""
    kind = url.split(":")[0]
    if kind == "postgresql":
        import psycopg

        with psycopg.connect(POSTGRES_URL or "", autocommit=True) as conn:
            query = "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s"
            count: int = conn.execute(query, (name,)).fetchall()[0][0]
            return count
    if kind == "redis":
        import redis

        with redis.Redis.from_url(REDIS_URL or "") as client:
            return sum(c["name"] == name for c in client.client_list())
    return None


def wait_until_disconnected(url: str, name: str) -> None:
    """Return once the server has ended every connection named ``name`` (``naming_connections``).

    A process killed with SIGKILL may leave its server a statement to finish: a COMMIT sent
    just before the kill lands after it, so a store looked at right after the kill can still
    change (a session listed, then deleted before it is read). The server ends the connection
    only once it has done what it was sent, so from then on the store holds what the dead
    process left. A file store needs no wait: the dead process made its writes itself.
    """
    deadline = time.monotonic() + 60
    while connections_named(url, name):
        assert time.monotonic() < deadline, f"the server kept connection {name!r} for 60 s"
        time.sleep(0.002)


class RawAccess:
    """Reaches under a store's API to damage or age what it stored, as the world might."""

    def __init__(self, store: SessionBase) -> None:
        self.store = store

    def corrupt_state(self, session_id: str, user_id: str) -> None:
        if _is_postgres(self.store):
            self._sql(
                "UPDATE {s}.ps_state SET value='{{broken' WHERE user_id=%s AND session_id=%s",
                (user_id, session_id),
            )
        elif _is_redis(self.store):
            with self._redis() as client:
                client.hset(self._redis_keys(session_id, user_id)[1], "a", "{broken")
        elif isinstance(self.store, JSONSession):
            self._doc_path(session_id, user_id).write_bytes(b'{"format": 1, "state": {"a": ')
        elif isinstance(self.store, SqliteSession):
            with self._db() as db:
                db.execute(
                    "UPDATE ps_state SET value='{broken' WHERE user_id=? AND session_id=?",
                    (user_id, session_id),
                )
        else:
            raise AssertionError("an in-memory store holds objects, not bytes")

    def corrupt_message(self, session_id: str, user_id: str, log: str, index: int) -> None:
        """Damage one stored message of a log (the JSON store's line keeps its length, so
        that the document still acknowledges the file's bytes and only the line is bad)."""
        if _is_postgres(self.store):
            self._sql(
                'UPDATE {s}.ps_messages SET message=\'{{"a": "}}\' '
                "WHERE user_id=%s AND session_id=%s AND log=%s AND seq=%s",
                (user_id, session_id, log, index),
            )
        elif _is_redis(self.store):
            from praisonsession.stores.backends.redis.keys import key_segment

            base = self._redis_keys(session_id, user_id)[0][: -len("meta")]
            with self._redis() as client:
                client.lset(base + "log:" + key_segment(log), index, '{"a": "}')
        elif isinstance(self.store, SqliteSession):
            with self._db() as db:
                db.execute(  # message ``index`` of the log is row id * 2**32 + index
                    'UPDATE ps_entries SET message=\'{"a": "}\' WHERE id=(SELECT id * 4294967296 '
                    "+ ? FROM ps_logs WHERE user_id=? AND session_id=? AND log=?)",
                    (index, user_id, session_id, log),
                )
        elif isinstance(self.store, JSONSession):
            logs = self._doc_path(session_id, user_id).with_suffix(".logs")
            (path,) = logs.glob(f"{filename_for(log)}.*.jsonl")
            lines = path.read_bytes().split(b"\n")
            lines[index] = b'{"a": "' + b"x" * (len(lines[index]) - 7)
            path.write_bytes(b"\n".join(lines))
        else:
            raise AssertionError(f"no raw access to the messages of {self.store!r}")

    def set_format(self, session_id: str, user_id: str, found: int) -> None:
        if _is_postgres(self.store):
            self._sql(
                "UPDATE {s}.ps_sessions SET format=%s WHERE user_id=%s AND session_id=%s",
                (found, user_id, session_id),
            )
        elif _is_redis(self.store):
            with self._redis() as client:
                client.hset(self._redis_keys(session_id, user_id)[0], "format", found)
        elif isinstance(self.store, JSONSession):
            path = self._doc_path(session_id, user_id)
            data = json.loads(path.read_text("utf-8"))
            data["format"] = found
            path.write_text(json.dumps(data), "utf-8")
        else:
            with self._db() as db:
                db.execute(
                    "UPDATE ps_sessions SET format=? WHERE user_id=? AND session_id=?",
                    (found, user_id, session_id),
                )

    def write_agentscope(
        self, session_id: str, modules: dict[str, Any], user_id: str = DEFAULT_USER
    ) -> str:
        """Leave a session where AgentScope 1.0 kept it, in its format (no envelope); returns
        the file name or key AgentScope used."""
        if _is_redis(self.store):
            # AgentScope's RedisSession: one JSON string per (user, session), no envelope
            key = self.store.backend._agentscope_key(Key(user_id, session_id))
            with self._redis() as client:
                client.set(key, json.dumps(modules))
            return key
        if isinstance(self.store, JSONSession):
            user = "" if user_id == DEFAULT_USER else user_id
            name = f"{user}_{session_id}.json" if user else f"{session_id}.json"
            path = self.store.save_dir / name
            path.parent.mkdir(parents=True, exist_ok=True)
            text = json.dumps(modules, ensure_ascii=False)
            path.write_bytes(text.encode("utf-8", "surrogatepass"))  # as AgentScope wrote it
            return name
        assert user_id == DEFAULT_USER, "AgentScope's SqliteSession example has no users"
        with self._db() as db:
            db.execute(
                "CREATE TABLE IF NOT EXISTS as_session (session_id TEXT, session_data JSON, "
                "created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, "
                "updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, PRIMARY KEY (session_id))"
            )
            db.execute(
                "INSERT INTO as_session (session_id, session_data) VALUES (?, json(?))",
                (session_id, json.dumps(modules)),
            )
        return session_id

    def raw_bytes(self, session_id: str, user_id: str) -> bytes:
        if _is_postgres(self.store):
            rows = self._sql(
                "SELECT name, convert_to(value, 'UTF8') FROM {s}.ps_state "
                "WHERE user_id=%s AND session_id=%s ORDER BY name",
                (user_id, session_id),
            )
            return b"".join(name.encode() + b"=" + bytes(value) + b"\n" for name, value in rows)
        if _is_redis(self.store):
            with self._redis() as client:
                state = client.hgetall(self._redis_keys(session_id, user_id)[1])
            return b"".join(name + b"=" + value + b"\n" for name, value in sorted(state.items()))
        if isinstance(self.store, JSONSession):
            return self._doc_path(session_id, user_id).read_bytes()
        with self._db() as db:
            rows = db.execute(
                "SELECT name, value FROM ps_state WHERE user_id=? AND session_id=? ORDER BY name",
                (user_id, session_id),
            ).fetchall()
        return repr(rows).encode()

    def all_files(self) -> list[Path]:
        root = (
            self.store.save_dir
            if isinstance(self.store, JSONSession)
            else self.store.backend.path.parent
        )
        return [p for p in root.parent.rglob("*") if p.is_file()]

    def age(self, session_id: str, user_id: str, seconds: float) -> None:
        """Move a PostgreSQL session's expiry ``seconds`` into the past (as time passing)."""
        self._sql(
            "UPDATE {s}.ps_sessions SET expires_at = expires_at - %s "
            "WHERE user_id=%s AND session_id=%s",
            (seconds, user_id, session_id),
        )

    def _sql(self, statement: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Run one statement on the store's tables ({s} is its schema), in a connection of
        its own."""
        import psycopg
        from psycopg import sql

        text = sql.SQL(statement).format(s=sql.Identifier(self.store.backend.schema))
        with psycopg.connect(self.store.backend._connections.conninfo, autocommit=True) as conn:
            cursor = conn.execute(text, params)
            return cursor.fetchall() if cursor.description else []

    def _doc_path(self, session_id: str, user_id: str) -> Path:
        assert isinstance(self.store, JSONSession)
        return self.store.save_dir / filename_for(user_id) / f"{filename_for(session_id)}.json"

    def _redis_keys(self, session_id: str, user_id: str) -> list[str]:
        return self.store.backend._keys(Key(user_id or DEFAULT_USER, session_id))

    @contextmanager
    def _redis(self) -> Iterator[Any]:
        import redis

        options = self.store.backend._options
        client = redis.Redis(
            host=options["host"], port=options["port"], db=options["db"], password=None
        )
        try:
            yield client
        finally:
            client.close()

    @contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        assert isinstance(self.store, SqliteSession)
        self.store.backend.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.store.backend.path, isolation_level=None)
        try:
            yield db
        finally:
            db.close()


def make_store(kind: str, root: Path, **options: Any) -> SessionBase:
    if kind == "memory":
        return InMemorySession(**options)
    if kind == "json":
        return JSONSession(root / "json-store", **options)
    if kind in ("redis", "postgres"):
        from praisonsession import open_store

        return open_store(store_url(kind, root), **options)
    if kind == "wrapped":
        inner = SqliteSession(root / "wrapped-store" / "sessions.db", **options)
        return SessionBase(CountingBackend(inner.backend))
    if kind == "encrypted":
        from praisonsession import EncryptedStore

        return EncryptedStore(JSONSession(root / "encrypted-store", **options), ENCRYPTION_KEY)
    return SqliteSession(root / "sqlite-store" / "sessions.db", **options)


def kind_of(store: SessionBase) -> str:
    return {
        "InMemoryBackend": "memory",
        "JSONBackend": "json",
        "SqliteBackend": "sqlite",
        "RedisBackend": "redis",
        "PostgresBackend": "postgres",
        "CountingBackend": "wrapped",
        "EncryptedBackend": "encrypted",
    }[type(beneath(store.backend)).__name__]


def _is_redis(store: SessionBase) -> bool:
    return kind_of(store) == "redis"


def _is_postgres(store: SessionBase) -> bool:
    return kind_of(store) == "postgres"
