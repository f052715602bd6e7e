"""The engines under praisonsession, bare: what our figures are measured against.

A figure of ours next to its raw engine, in the same process run, says how much the library
costs over the engine itself, at the same durability:

- SQLite: one row, ``UPDATE ... SET value = value + 1`` then ``COMMIT`` (Python's ``sqlite3``
  opens the transaction itself), in a WAL file with the same ``synchronous`` as ours.
- Redis: redis-py round trips on the same server: ``INCRBY``, and ``EVALSHA`` of a one-line
  script that does the same ``INCRBY``.

Each function checks what it counted, like our own figures do.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
import time
import uuid
from typing import Any

SQLITE_SYNCHRONOUS = {"process": "NORMAL", "power": "FULL"}  # as praisonsession maps them


def sqlite_update_commit(synchronous: str, n: int) -> float:
    """Bare ``UPDATE`` + ``COMMIT`` per second on one row (WAL, the given ``synchronous``)."""
    with tempfile.TemporaryDirectory(prefix="ps-raw-sqlite-") as folder:
        conn = sqlite3.connect(os.path.join(folder, "raw.db"))
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA synchronous={synchronous}")
            conn.execute("CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL)")
            conn.execute("INSERT INTO counters VALUES ('hits', 0)")
            conn.commit()
            update = "UPDATE counters SET value = value + 1 WHERE name = ?"
            start = time.perf_counter()
            for _ in range(n):
                conn.execute(update, ("hits",))
                conn.commit()
            elapsed = time.perf_counter() - start
            (value,) = conn.execute("SELECT value FROM counters").fetchone()
        finally:
            conn.close()
    if value != n:
        raise RuntimeError(f"raw SQLite counted {value}, not {n}")
    return n / elapsed


def sqlite_increment_statements(synchronous: str, n: int) -> float:
    """The statements of our ``increment_state`` on SQLite, run bare: the floor under it.

    BEGIN IMMEDIATE; one UPDATE of the session's head row (version, updated_at, sliding
    expiry) only if the session is live and of a format we read; one UPDATE of the value only
    if it still holds the text last written there (the two rows of ``ps_state`` side by side:
    one B-tree page, one WAL frame); COMMIT. Our facade's figure over this one is what the
    Python around the SQL costs.
    """
    from praisonsession import SqliteSession
    from praisonsession._internal import runtime
    from praisonsession.stores.backends.sqlite.schema import BUMP_LIVE, SET_IF_HELD

    with tempfile.TemporaryDirectory(prefix="ps-floor-sqlite-") as folder:
        store = SqliteSession(os.path.join(folder, "s.db"), synchronous=synchronous)
        runtime.run(store.increment("floor", "bench", "hits"), inline=True)  # schema, session
        cursor = store.backend._cursor()
        held = 1
        start = time.perf_counter()
        for _ in range(n):
            cursor.execute("BEGIN IMMEDIATE")
            bump = (time.time(), True, "bench", "floor")
            bumped = cursor.execute(BUMP_LIVE, bump).rowcount
            written = cursor.execute(
                SET_IF_HELD, ("bench", "floor", "hits", str(held + 1), str(held))
            ).rowcount
            cursor.execute("COMMIT")
            if bumped != 1 or written != 1:
                raise RuntimeError("the bare statements found the session or value changed")
            held += 1
        elapsed = time.perf_counter() - start
        final = runtime.run(store.get_value("floor", "bench", "hits"), inline=True)
        runtime.run(store.close(), inline=True)
    if final != n + 1:
        raise RuntimeError(f"the bare statements counted {final}, not {n + 1}")
    return n / elapsed


INCR_SCRIPT = "return redis.call('INCRBY', KEYS[1], ARGV[1])"


def redis_round_trips(url: str, n: int) -> dict[str, float]:
    """redis-py ``INCRBY`` and ``EVALSHA`` (of an INCRBY script) round trips per second."""
    import redis

    client = redis.Redis.from_url(url)
    key = f"ps-raw-{uuid.uuid4().hex}"
    try:
        sha = client.script_load(INCR_SCRIPT)
        client.incrby(key, 1)  # connect before timing
        rates = {}
        for name, call in (
            ("incrby", lambda: client.incrby(key, 1)),
            ("evalsha", lambda: client.evalsha(sha, 1, key, 1)),
        ):
            start = time.perf_counter()
            for _ in range(n):
                call()
            rates[name] = n / (time.perf_counter() - start)
        if int(client.get(key)) != 2 * n + 1:
            raise RuntimeError("raw Redis lost an increment")
    finally:
        client.delete(key)
        client.close()
    return rates


def redis_server_durability(url: str) -> dict[str, Any]:
    """The server's version, ``appendonly`` and ``appendfsync``, and what a write it
    acknowledged survives (``power``: appendfsync always; ``process``: a redis-server crash;
    ``memory``: no append-only file, so a restart loses what the last snapshot lacks)."""
    import redis

    client = redis.Redis.from_url(url)
    try:
        config = client.config_get("append*")
        version = client.info("server").get("redis_version", "?")
    finally:
        client.close()
    found = {_text(k): _text(v) for k, v in config.items()}
    appendonly, appendfsync = found.get("appendonly", "?"), found.get("appendfsync", "?")
    level = "power" if appendfsync == "always" else "process"  # a crash of redis-server
    if appendonly != "yes":
        level = "memory"  # a restart loses what the last snapshot lacks
    return {
        "version": version,
        "appendonly": appendonly,
        "appendfsync": appendfsync,
        "survives": level,
    }


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
