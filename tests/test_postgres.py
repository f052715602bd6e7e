"""What only PostgreSQL has: its URL, its schema (named, quoted, versioned), the two ways a
call runs (a blocking connection of the caller's thread, or an asyncio pool), and a server
that is down. Everything shared with the other stores is in the conformance suites, which run
on PostgreSQL too; every test here uses the test session's real server (``postgres_url``).
"""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from backends import postgres_schema
from held import SAFETY
from ports import closed_port
from praisonsession import (
    ConflictError,
    InvalidValueError,
    MessageLog,
    MissingDependencyError,
    PostgresSession,
    Session,
    SessionCorruptedError,
    StateModule,
    StoreUnavailableError,
    UnsupportedFormatError,
    open_store,
)
from praisonsession.stores import LogWrite, record_key
from praisonsession.stores.backends.postgres import schema as sql
from praisonsession.stores.backends.postgres.url import parse_url
from praisonsession.stores.guard import beneath
from together import together


def schema_url(postgres_url: str, tmp_path: Path, schema: str | None = None) -> str:
    return f"{postgres_url}?schema={schema or postgres_schema(tmp_path)}"


def query(store: PostgresSession, text: str, params: tuple = ()) -> list[tuple]:
    """One statement on a connection of its own ({s}: the store's schema, quoted)."""
    import psycopg
    from psycopg import sql

    statement = sql.SQL(text).format(s=sql.Identifier(store.backend.schema))
    with psycopg.connect(store.backend._connections.conninfo, autocommit=True) as conn:
        cursor = conn.execute(statement, params)
        return cursor.fetchall() if cursor.description else []


@contextmanager
def row_held(store: PostgresSession, session_id: str) -> Iterator[None]:
    """Another connection's open transaction holding the session's row, as a writer of it
    does; released (rolled back) on leaving."""
    import psycopg

    with psycopg.connect(store.backend._connections.conninfo) as holder:
        holder.execute(
            f'SELECT 1 FROM "{store.backend.schema}".ps_sessions WHERE session_id = %s FOR UPDATE',
            (session_id,),
        )
        yield
        holder.rollback()


# -- URLs -----------------------------------------------------------------------------------


def test_urls_give_the_store_its_options_and_libpq_the_rest() -> None:
    conninfo, options = parse_url(
        "postgres://app:secret@db.internal:6543/sessions?schema=chat&pool_size=4"
        "&sslmode=require&connect_timeout=3&durability=power"
    )
    assert conninfo == (
        "postgresql://app:secret@db.internal:6543/sessions?sslmode=require&connect_timeout=3"
    )
    assert options == {
        "schema": "chat",
        "pool_size": 4,
        "connect_timeout": 3.0,
        "durability": "power",
    }
    store = open_store("postgresql://app:secret@db.internal/sessions?schema=chat")
    assert isinstance(store, PostgresSession)
    assert store.url == "postgresql://app:***@db.internal/sessions?schema=chat"  # no password
    assert "secret" not in repr(store)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("postgresql://h/db?pool_size=many", "pool_size='many' is not valid"),
        ("postgresql://h/db?pool_size=0", "pool_size must be an int >= 1"),
        ("postgresql://h:port/db", "invalid port"),
        ("postgresql://h/db?connect_timeout=soon", "connect_timeout='soon' is not seconds"),
        ("postgresql://h/db?durability=always", "'process'"),
        ("postgresql://h/db?schema=" + "x" * 64, "1 to 63 characters"),
    ],
)
def test_a_bad_url_is_refused_before_connecting(url: str, message: str) -> None:
    with pytest.raises(InvalidValueError, match=message):
        open_store(url)


# -- the schema ------------------------------------------------------------------------------


def test_tables_live_in_the_named_schema_whose_name_is_quoted_never_spliced(
    postgres_url: str, tmp_path: Path, run
) -> None:
    odd = 'Odd "schema"; DROP TABLE x; --'
    store = open_store(postgres_url, schema=odd)
    try:
        assert run(store.increment("s", "u", "n")) == 1
        tables = query(
            store,
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s "
            "ORDER BY table_name",
            (odd,),
        )
        assert [t for (t,) in tables] == [
            "ps_logs", "ps_messages", "ps_modules", "ps_schema", "ps_sessions", "ps_state",
        ]  # fmt: skip
        assert query(store, "SELECT version FROM {s}.ps_schema") == [(4,)]
        other = open_store(schema_url(postgres_url, tmp_path))
        assert run(other.get_state("s", "u")) == {}  # another schema, another store
        run(other.close())
    finally:
        query(store, "DROP SCHEMA {s} CASCADE")
        run(store.close())


def test_ids_are_parameters_even_when_they_look_like_sql(
    postgres_url: str, tmp_path: Path, run
) -> None:
    store = open_store(schema_url(postgres_url, tmp_path))
    evil = "x'); DELETE FROM ps_state; --"
    run(store.patch_state("victim", "u", {"keep": 1}))
    run(store.patch_state(evil, evil, {evil: evil}))
    assert run(store.get_state(evil, evil)) == {evil: evil}
    assert run(store.get_state("victim", "u")) == {"keep": 1}
    run(store.close())


def test_a_schema_of_a_newer_version_is_refused_and_left_alone(
    postgres_url: str, tmp_path: Path, run
) -> None:
    url = schema_url(postgres_url, tmp_path)
    store = open_store(url)
    run(store.increment("s", "u", "n"))
    query(store, "UPDATE {s}.ps_schema SET version = 99")
    newer = open_store(url)
    with pytest.raises(UnsupportedFormatError, match="Upgrade praisonsession"):
        run(newer.get_state("s", "u"))
    assert query(store, "SELECT version FROM {s}.ps_schema") == [(99,)]
    run(newer.close())
    run(store.close())


def test_many_stores_creating_one_schema_at_once_create_it_once(
    postgres_url: str, tmp_path: Path, run
) -> None:
    """The advisory lock: eight threads, each with a store of its own, meet a schema that
    does not exist yet; every one of them works, and the schema is made once."""
    url = schema_url(postgres_url, tmp_path)
    stores = [open_store(url) for _ in range(8)]

    def first_call(store: PostgresSession) -> None:
        run(store.increment("s", "u", "n"), inline=True)

    together(*(partial(first_call, store) for store in stores))  # raises what one raised
    assert run(stores[0].get_value("s", "u", "n")) == 8
    assert query(stores[0], "SELECT count(*) FROM {s}.ps_schema") == [(1,)]
    for store in stores:
        run(store.close(), inline=True)


# -- the two ways a call runs ----------------------------------------------------------------


def test_a_sync_session_runs_inline_on_a_connection_of_its_thread_and_async_code_on_a_pool(
    postgres_url: str, tmp_path: Path
) -> None:
    url = schema_url(postgres_url, tmp_path)
    with Session("chat", "ada", store=url) as session:
        store = session.store
        assert isinstance(store, PostgresSession) and store.backend.runs_inline
        for _ in range(5):
            session.increment_state("turns")
        session.append_messages("log", [{"role": "user", "content": "hi"}])
        inline = store.backend._connections._local.conn
        assert inline is not None and not inline.closed  # this thread's own connection
        assert store.backend._connections._pools == {}  # no event loop was needed

        async def from_async_code() -> tuple[int, list]:
            value = await store.increment("chat", "ada", "turns")
            return value, await store.read_messages("chat", "ada", "log")

        value, messages = asyncio.run(from_async_code())  # a loop: the pool of that loop
        assert (value, messages) == (6, [{"role": "user", "content": "hi"}])
        assert session.get_state("turns") == 6  # and back inline, seeing the same rows


def test_an_increment_by_another_writer_in_between_is_counted(
    postgres_url: str, tmp_path: Path, run
) -> None:
    """Two stores on one session take turns: each one's remembered value goes stale, and the
    server's compare (on the session's version, then on the value) catches it every time."""
    url = schema_url(postgres_url, tmp_path)
    first, second = open_store(url), open_store(url)
    values = []
    for i in range(20):
        store = first if i % 3 else second
        values.append(run(store.increment("s", "u", "n", 2), inline=True))
        if i == 10:
            run(second.patch_state("s", "u", {"other": True}), inline=True)
    assert values == list(range(2, 42, 2))
    run(first.patch_state("s", "u", {"n": "text"}), inline=True)
    with pytest.raises(InvalidValueError, match="not a number"):
        run(second.increment("s", "u", "n"), inline=True)
    run(first.delete_session("s", "u"), inline=True)
    assert run(second.increment("s", "u", "n"), inline=True) == 1  # a new session, from 0
    for store in (first, second):
        run(store.close(), inline=True)


class _Notes(StateModule):
    def __init__(self) -> None:
        super().__init__()
        self.topic = "first"
        self.memory = MessageLog()
        self.register_state("topic")


def test_a_turn_skips_its_unchanged_document_only_while_nobody_else_wrote_the_session(
    postgres_url: str, tmp_path: Path
) -> None:
    """A one-log save leaves the module document alone (not even locked) when the session is
    still at the version its own last save left; after another writer, it writes it again."""
    url = schema_url(postgres_url, tmp_path)
    first, second = open_store(url), open_store(url)
    mine, theirs = _Notes(), _Notes()

    def document_row() -> tuple:
        return query(first, "SELECT document, xmin::text, xmax::text FROM {s}.ps_modules")[0]

    with Session("s", "u", store=first) as ours, Session("s", "u", store=second) as other:
        ours.load_modules(notes=mine)
        mine.memory.append({"role": "user", "content": "0"})
        ours.save_modules(notes=mine)
        written = document_row()
        mine.memory.append({"role": "user", "content": "1"})
        ours.save_modules(notes=mine)
        assert document_row() == written  # skipped: neither rewritten nor locked

        other.load_modules(notes=theirs)
        theirs.topic = "second"
        theirs.memory.append({"role": "user", "content": "2"})
        other.save_modules(notes=theirs)
        assert '"second"' in document_row()[0]

        mine.memory.append({"role": "user", "content": "3"})
        ours.save_modules(notes=mine)  # unchanged here, but the stored one is theirs now
        fresh = _Notes()
        other.load_modules(notes=fresh)
        assert fresh.topic == "first"
        assert [m["content"] for m in fresh.memory] == ["0", "1", "2", "3"]
        assert [m["content"] for m in mine.memory] == ["0", "1", "2", "3"]


# -- schema 1, migrated -------------------------------------------------------------------

# Schema 1's tables, exactly as praisonsession created them before the log lengths moved into
# the session's row (ps_increment, unchanged, is made again by the migration's store).
_KEY = 'text COLLATE "C" NOT NULL'
SCHEMA_1 = (
    "CREATE SCHEMA {s}",
    "CREATE TABLE {s}.ps_schema (version integer NOT NULL)",
    f"""CREATE TABLE {{s}}.ps_sessions (
    user_id {_KEY}, session_id {_KEY}, format integer NOT NULL,
    created_at double precision NOT NULL, updated_at double precision NOT NULL,
    expires_at double precision, ttl double precision, version bigint NOT NULL,
    metadata text NOT NULL, PRIMARY KEY (user_id, session_id))""",
    "CREATE INDEX ps_sessions_expiry ON {s}.ps_sessions (expires_at) WHERE expires_at IS NOT NULL",
    f"""CREATE TABLE {{s}}.ps_state (
    user_id {_KEY}, session_id {_KEY}, name {_KEY}, value text NOT NULL,
    PRIMARY KEY (user_id, session_id, name))""",
    f"""CREATE TABLE {{s}}.ps_modules (
    user_id {_KEY}, session_id {_KEY}, name {_KEY}, document text NOT NULL,
    PRIMARY KEY (user_id, session_id, name))""",
    f"""CREATE TABLE {{s}}.ps_logs (
    user_id {_KEY}, session_id {_KEY}, log {_KEY}, length bigint NOT NULL,
    PRIMARY KEY (user_id, session_id, log))""",
    f"""CREATE TABLE {{s}}.ps_messages (
    user_id {_KEY}, session_id {_KEY}, log {_KEY}, seq bigint NOT NULL, message text NOT NULL,
    PRIMARY KEY (user_id, session_id, log, seq))""",
    "INSERT INTO {s}.ps_schema (version) VALUES (1)",
)
NOW = 1_800_000_000.0
# What the old schemas' code wrote alike: a state key, a module with its log of 3 messages,
# and two logs "notes" (of 2 messages, of 1).
CONTENT_ROWS = (
    "INSERT INTO {s}.ps_state VALUES ('u', 'chat', 'n', '41')",
    "INSERT INTO {s}.ps_modules VALUES ('u', 'chat', 'agent', "
    '\'{{"topic":"first","memory":{{}}}}\')',
    "INSERT INTO {s}.ps_messages SELECT 'u', 'chat', 'agent.memory', i, "
    'format(\'{{"role":"user","content":"m%%s"}}\', i) FROM generate_series(0, 2) i',
    "INSERT INTO {s}.ps_messages SELECT 'u', 'chat', 'notes', i, "
    "format('{{\"n\":%%s}}', i) FROM generate_series(0, 1) i",
    "INSERT INTO {s}.ps_messages VALUES ('u', 'ttl', 'notes', 0, '{{\"n\":0}}')",
)


def written_by_old_code(
    store: PostgresSession, schema: tuple[str, ...], rows: tuple[str, ...]
) -> None:
    """The store's schema as an older version created it, holding what that version wrote."""
    for statement in schema:
        query(store, statement)
    for statement in rows:
        query(store, statement, {"t": time.time()} if "%(t)s" in statement else ())


# What schema 1's code wrote for three sessions: their rows, a state key, a module, two logs
# with their acknowledged lengths, and the length of a session deleted meanwhile.
ROWS_1 = (
    "INSERT INTO {s}.ps_sessions VALUES "
    "('u', 'chat', 1, %(t)s - 100, %(t)s - 10, NULL, NULL, 7, '{{\"topic\":\"tea\"}}'), "
    "('u', 'ttl', 1, %(t)s - 100, %(t)s - 10, %(t)s + 3590, 3600, 2, '{{}}'), "
    "('v', 'chat', 1, %(t)s - 50, %(t)s - 5, NULL, NULL, 1, '{{}}')",
    *CONTENT_ROWS,
    "INSERT INTO {s}.ps_logs VALUES ('u', 'chat', 'agent.memory', 3), ('u', 'chat', 'notes', 3), "
    "('u', 'ttl', 'notes', 1), ('gone', 'x', 'notes', 5)",
    "INSERT INTO {s}.ps_messages VALUES ('u', 'chat', 'notes', 2, '{{\"n\":2}}')",
)


def test_a_schema_1_database_is_migrated_keeping_every_session_log_and_length(
    postgres_url: str, tmp_path: Path, run
) -> None:
    url = schema_url(postgres_url, tmp_path)
    store = open_store(url)
    try:
        written_by_old_code(store, SCHEMA_1, ROWS_1)

        # the first call migrates; everything schema 1 held reads back the same
        assert run(store.get_state("chat", "u")) == {"n": 41}
        assert query(store, "SELECT version FROM {s}.ps_schema") == [(4,)]
        # schema 3 indexes sessions by id, so listing every user's by a prefix seeks
        assert query(
            store,
            "SELECT to_regclass(format('%%I.ps_sessions_by_id', %s::text)) IS NOT NULL",
            (store.backend.schema,),
        ) == [(True,)]
        by_prefix = run(store.backend.list_records_by_prefix("ch", limit=10, after=None))
        assert [(i.user_id, i.session_id) for i in by_prefix] == [("u", "chat"), ("v", "chat")]
        assert run(store.message_count("chat", "u", "agent.memory")) == 3
        assert run(store.message_count("chat", "u", "notes")) == 3
        assert run(store.read_messages("chat", "u", "notes")) == [{"n": 0}, {"n": 1}, {"n": 2}]
        assert run(store.message_count("ttl", "u", "notes")) == 1
        info = run(store.get_info("chat", "u"))
        assert (info.version, dict(info.metadata)) == (7, {"topic": "tea"})
        assert [i.session_id for i in run(store.list_sessions("u"))] == ["chat", "ttl"]
        assert [i.session_id for i in run(store.list_sessions("v"))] == ["chat"]
        assert lengths(store) == [
            ("u", "chat", "agent.memory", 3),
            ("u", "chat", "notes", 3),
            ("u", "ttl", "notes", 1),
        ]  # through schema 2's jsonb: the length of a session that no longer existed went
        assert not has_logs_column(store)

        # and the session goes on where it was: the next turn lands after the third message
        with Session("chat", "u", store=url) as session:
            notes = _Notes()
            session.load_modules(agent=notes)
            assert notes.topic == "first"
            assert [m["content"] for m in notes.memory] == ["m0", "m1", "m2"]
            notes.memory.append({"role": "user", "content": "m3"})
            session.save_modules(agent=notes)
            assert session.message_count("agent.memory") == 4
            assert session.append_messages("notes", [{"n": 9}]) == 4
            assert session.read_messages("notes")[2:] == [{"n": 2}, {"n": 9}]
    finally:
        query(store, "DROP SCHEMA {s} CASCADE")
        run(store.close())


def lengths(store: PostgresSession) -> list[tuple]:
    return query(store, "SELECT * FROM {s}.ps_logs ORDER BY 1, 2, 3")


def has_logs_column(store: PostgresSession) -> bool:
    found = query(
        store,
        "SELECT count(*) FROM information_schema.columns WHERE table_schema = %s "
        "AND table_name = 'ps_sessions' AND column_name = 'logs'",
        (store.backend.schema,),
    )
    return bool(found[0][0])


# -- schema 3, migrated -------------------------------------------------------------------

# Schema 3's tables as praisonsession created them while each log's length was a key of one
# jsonb value in its session's row (ps_increment, unchanged since, comes from today's schema).
SCHEMA_3 = (
    *(
        # schema 2 moved ps_logs into ps_sessions.logs; schema 3 indexed sessions by id
        table.replace(
            "metadata text NOT NULL,",
            "metadata text NOT NULL, logs jsonb NOT NULL DEFAULT '{{}}',",
        )
        for table in SCHEMA_1[:-1]
        if "ps_logs" not in table
    ),
    "CREATE INDEX ps_sessions_by_id ON {s}.ps_sessions (session_id, user_id)",
    *(s for s in sql.SCHEMA if s.startswith("CREATE OR REPLACE FUNCTION")),
    "INSERT INTO {s}.ps_schema (version) VALUES (3)",
)
# What schema 3's code wrote: two sessions with logs (one of them cut to 2 by a truncation,
# its third message gone), one without.
ROWS_3 = (
    "INSERT INTO {s}.ps_sessions VALUES "
    "('u', 'chat', 1, %(t)s - 100, %(t)s - 10, NULL, NULL, 7, '{{}}', "
    '\'{{"notes": 2, "agent.memory": 3}}\'), '
    "('u', 'ttl', 1, %(t)s - 100, %(t)s - 10, %(t)s + 3590, 3600, 2, '{{}}', "
    "'{{\"notes\": 1}}'), "
    "('v', 'chat', 1, %(t)s - 50, %(t)s - 5, NULL, NULL, 1, '{{}}', '{{}}')",
    *CONTENT_ROWS,
)


def test_a_schema_3_database_moves_its_log_lengths_into_rows_of_their_own(
    postgres_url: str, tmp_path: Path, run
) -> None:
    url = schema_url(postgres_url, tmp_path)
    store = open_store(url)
    try:
        written_by_old_code(store, SCHEMA_3, ROWS_3)

        # the first call migrates: each length of the jsonb is a row, the column is gone
        assert run(store.get_state("chat", "u")) == {"n": 41}
        assert query(store, "SELECT version FROM {s}.ps_schema") == [(4,)]
        assert lengths(store) == [
            ("u", "chat", "agent.memory", 3),
            ("u", "chat", "notes", 2),
            ("u", "ttl", "notes", 1),
        ]
        assert not has_logs_column(store)
        assert run(store.increment("chat", "u", "n")) == 42  # ps_increment still there

        # and every log goes on where it was
        assert run(store.message_count("chat", "u", "notes")) == 2
        tail = store.backend.read_log(
            record_key("chat", "u"), path="agent.memory", start=-2, stop=None
        )
        assert run(tail) == [  # from the end: from the length in its row
            {"role": "user", "content": "m1"},
            {"role": "user", "content": "m2"},
        ]
        with pytest.raises(ConflictError, match="holds 2 messages, not 3"):
            run(store.append_messages("chat", "u", "notes", [{"n": 9}], expected_length=3))
        assert run(store.append_messages("chat", "u", "notes", [{"n": 2}], expected_length=2)) == 3
        assert run(store.append_messages("ttl", "u", "notes", [{"n": 1}])) == 2
        assert run(store.read_messages("chat", "u", "notes")) == [{"n": 0}, {"n": 1}, {"n": 2}]
        assert run(store.read_messages("ttl", "u", "notes")) == [{"n": 0}, {"n": 1}]
        with Session("chat", "u", store=url) as session:
            notes = _Notes()
            session.load_modules(agent=notes)
            assert [m["content"] for m in notes.memory] == ["m0", "m1", "m2"]
        run(store.delete_session("chat", "u"))
        assert lengths(store) == [("u", "ttl", "notes", 2)]  # a session's lengths go with it
    finally:
        query(store, "DROP SCHEMA {s} CASCADE")
        run(store.close())


def test_a_store_that_waited_while_another_migrated_sees_the_new_schema_whatever_the_isolation(
    postgres_url: str, tmp_path: Path, run
) -> None:
    """Two processes meet schema 3 at once: the one that waits for the advisory lock reads the
    version the other committed, even where the database's default isolation is REPEATABLE
    READ (whose snapshot, taken as the lock was asked for, still says 3: it migrated again and
    failed on ps_logs, which exists). The lock's holder here migrates as another store would."""
    import psycopg
    from psycopg import sql as psql

    url = schema_url(postgres_url, tmp_path)
    store = open_store(url + "&options=-c%20default_transaction_isolation%3Drepeatable%5C%20read")
    written_by_old_code(store, SCHEMA_3, ROWS_3)
    schema = store.backend.schema
    found: list[Any] = []

    def first_call() -> None:
        try:
            found.append(run(store.get_state("chat", "u"), inline=True))
        except BaseException as exc:  # reported below
            found.append(exc)

    waiting = (
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted "
        "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
    )
    try:
        with psycopg.connect(store.backend._connections.conninfo) as holder:
            holder.execute(sql.SCHEMA_LOCK, (schema,))
            thread = threading.Thread(target=first_call)
            thread.start()
            deadline = time.monotonic() + SAFETY
            while query(store, waiting) == [(0,)]:  # the store's migration waits for the lock
                assert time.monotonic() < deadline, "the store never asked for the lock"
                time.sleep(0.01)
            for statement in (*sql.MIGRATIONS[3], *sql.SCHEMA_VERSION_WRITE):
                text = psql.SQL(statement).format(s=psql.Identifier(schema))
                holder.execute(text, (sql.SCHEMA_VERSION,) if "%s" in statement else ())
            holder.commit()
            thread.join()
        assert found == [{"n": 41}]
        assert lengths(store) == [
            ("u", "chat", "agent.memory", 3),
            ("u", "chat", "notes", 2),
            ("u", "ttl", "notes", 1),
        ]
    finally:
        query(store, "DROP SCHEMA {s} CASCADE")
        run(store.close())


# -- a write's work is its own logs' --------------------------------------------------------


def test_an_append_writes_the_rows_of_its_log_alone_however_many_logs_the_session_holds(
    postgres_url: str, tmp_path: Path, run
) -> None:
    """What the transaction of one append wrote (the rows whose xmin is its id): the session's
    row, its log's length row and the message, the same rows of the same sizes in a session
    of no other log and in one of 2,000 (schema 3 rewrote every log's length each time)."""
    store = open_store(schema_url(postgres_url, tmp_path))
    backend = store.backend
    try:
        for session, count in (("few", 0), ("lot", 2000)):
            key = record_key(session, "u")
            for first in range(0, count, 500):
                writes = [
                    LogWrite(f"other{i}.log", [{"i": i}], None) for i in range(first, first + 500)
                ]
                run(backend.write_modules(key, documents={}, writes=writes))
            run(backend.append_log(key, write=LogWrite("target", [{"n": 0}], -1)))

        def written_by_last_append(session: str) -> list[tuple]:
            (xid,), *_ = query(
                store,
                "SELECT xmin::text FROM {s}.ps_messages WHERE session_id = %s AND log = 'target' "
                "AND seq = (SELECT max(seq) FROM {s}.ps_messages WHERE session_id = %s "
                "AND log = 'target')",
                (session, session),
            )
            return query(
                store,
                " UNION ALL ".join(
                    f"SELECT '{table}', pg_column_size(t.*) FROM {{s}}.{table} t "
                    "WHERE t.session_id = %(s)s AND t.xmin::text = %(x)s"
                    for table in ("ps_sessions", "ps_logs", "ps_messages", "ps_state", "ps_modules")
                ),
                {"s": session, "x": xid},
            )

        for n in range(1, 4):  # the first append, and later ones
            for session in ("few", "lot"):
                key = record_key(session, "u")
                assert (
                    run(backend.append_log(key, write=LogWrite("target", [{"n": n}], -1))) == n + 1
                )
            few, lot = written_by_last_append("few"), written_by_last_append("lot")
            assert [table for table, _ in few] == ["ps_sessions", "ps_logs", "ps_messages"]
            assert lot == few
        assert run(backend.count_log(record_key("lot", "u"), path="other1999.log")) == 1
    finally:
        query(store, "DROP SCHEMA {s} CASCADE")
        run(store.close())


# -- a server that is not there ----------------------------------------------------------


# -- a state narrowed in the server ---------------------------------------------------------


def test_a_state_narrowed_by_fields_comes_back_with_every_value_python_finds_equal(
    postgres_url: str, tmp_path: Path, run
) -> None:
    """PostgreSQL tests the fields itself (each value read as ``json``), so what comes back is
    the values holding them, in every spelling Python finds equal (``1``, ``1.0``, ``true``;
    ``0`` and ``-0.0``), a number written as the str wanted (the caller tests again), and the
    values it cannot look into: no object, a \\u escape, not JSON at all (whose decode
    names it)."""
    store = open_store(schema_url(postgres_url, tmp_path))
    items = {f"k{n:02}": {"value": {"n": n % 10, "text": f'note {n} "é"'}} for n in range(40)}
    others = {
        "float": {"value": {"n": 7.0}},
        "true": {"value": {"n": True}},
        "minus zero": {"value": {"n": -0.0}},
        "text 7": {"value": {"n": "7"}},
        "escaped": {"value": {"n": 3, "text": "a\x01b"}},
        "plain": "text",
    }
    run(store.patch_state("chat", "alice", {**items, **others}), inline=True)
    key = record_key("chat", "alice")

    def narrowed(*fields: tuple[tuple[str, ...], Any]) -> set[str]:
        found = run(
            store.backend.read_record_state_matching(key, fields=fields, must_exist=True),
            inline=True,
        )
        assert all(found[name] == {**items, **others}[name] for name in found)
        return set(found)

    looked_past = {"escaped", "plain"}
    assert narrowed((("value", "n"), 7)) == {"k07", "k17", "k27", "k37", "float", "text 7"} | (
        looked_past
    )
    assert narrowed((("value", "n"), True)) == {"k01", "k11", "k21", "k31", "true"} | looked_past
    assert narrowed((("value", "n"), 0)) == {"k00", "k10", "k20", "k30", "minus zero"} | (
        looked_past
    )
    assert narrowed((("value", "n"), 7), (("value", "text"), 'note 17 "é"')) == {"k17"} | (
        looked_past
    )
    assert narrowed((("value", "n"), 2**70)) == looked_past
    query(store, "UPDATE {s}.ps_state SET value = '{{broken' WHERE name = 'k05'")
    with pytest.raises(SessionCorruptedError, match="k05"):
        narrowed((("value", "n"), 7))
    run(store.close(), inline=True)


def test_a_server_that_is_down_raises_a_typed_error() -> None:
    with closed_port() as port:  # bound, never listening: every connection is refused
        store = open_store(f"postgresql://app:hunter2@127.0.0.1:{port}/db?connect_timeout=1")
        with (
            pytest.raises(StoreUnavailableError, match="Cannot reach PostgreSQL") as caught,
            Session("s", store=store) as session,
        ):
            session.get_state("a")
    assert "hunter2" not in str(caught.value)


def test_durability_power_warns_when_the_server_does_not_fsync(
    postgres_url: str, tmp_path: Path, run, caplog: pytest.LogCaptureFixture
) -> None:
    store = open_store(schema_url(postgres_url, tmp_path) + "&durability=power")
    assert store.backend.durability == "power"
    with caplog.at_level(logging.WARNING, logger="praisonsession"):
        run(store.increment("s", "u", "n"))
    fsync = query(store, "SELECT current_setting('fsync')")[0][0]
    warned = [r for r in caplog.records if "fsync" in r.getMessage()]
    assert len(warned) == (1 if fsync != "on" else 0)
    run(store.close())


def test_a_script_that_leaves_its_loop_unclosed_exits_without_pending_tasks(
    postgres_url: str, tmp_path: Path
) -> None:
    """A script that runs its async code on a loop it never closes, and drops the store: the
    pool's scheduler and workers are closed at exit, not destroyed pending."""
    code = (
        "import asyncio\n"
        "from praisonsession import AsyncSession\n"
        "loop = asyncio.new_event_loop()\n"
        "async def main():\n"
        f"    session = AsyncSession('s', store={schema_url(postgres_url, tmp_path)!r})\n"
        "    await session.set_state('a', 1)\n"
        "    print(await session.get_state('a'))\n"
        "loop.run_until_complete(main())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout) == (0, "1\n"), done.stderr
    assert "Task was destroyed" not in done.stderr and done.stderr == ""


def test_asyncio_run_of_concurrent_writes_ends_though_the_store_is_never_closed(
    postgres_url: str, tmp_path: Path
) -> None:
    """Two writes at once grow a loop's pool by a connection made in the background; when
    ``asyncio.run`` ended while it was being made, the pool's worker took the cancel for a
    failed attempt and waited on, and ``asyncio.run`` never returned (within 20 runs, here).
    Each run here is a new loop that ends as soon as its writes are done; the script must end,
    quietly."""
    code = (
        "import asyncio\n"
        "from praisonsession.stores import open_store, record_key\n"
        f"backend = open_store({schema_url(postgres_url, tmp_path)!r}).backend\n"
        "async def two(n):\n"
        "    made = [record_key('u', f'{side}{n}') for side in 'ab']\n"
        "    await asyncio.gather(\n"
        "        *(backend.create_record(key, ttl=None, metadata={}) for key in made)\n"
        "    )\n"
        "    return n\n"
        "print(sum(asyncio.run(two(n)) for n in range(150)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=SAFETY
    )
    assert (done.returncode, done.stdout) == (0, f"{sum(range(150))}\n"), done.stderr
    assert done.stderr == ""  # no warning of a connection attempt the loop's end cancelled


# -- installation -----------------------------------------------------------------------------


def test_import_praisonsession_does_not_import_psycopg() -> None:
    code = (
        "import sys, praisonsession\n"
        "from praisonsession import PostgresSession\n"
        "assert 'psycopg' not in sys.modules, 'psycopg imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_without_psycopg_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    from praisonsession.stores.backends.postgres import backend

    monkeypatch.setattr(backend._Errors, "races", ())  # as in a process that made no store yet
    for name in ("psycopg", "psycopg_pool", "psycopg.errors"):
        monkeypatch.setitem(sys.modules, name, None)  # what an environment without it gives
    with pytest.raises(MissingDependencyError, match=r"praisonsession\[postgres\]"):
        PostgresSession("postgresql://127.0.0.1/db")


def test_a_lock_wait_bounded_on_the_server_fails_typed_and_applies_nothing(
    postgres_url: str, tmp_path: Path, run
) -> None:
    url = schema_url(postgres_url, tmp_path)
    store = open_store(url)
    run(store.increment("s", "u", "n"), inline=True)
    impatient = open_store(url + "&options=-c%20lock_timeout%3D200ms")
    with (
        row_held(store, "s"),  # a transaction left open
        pytest.raises(StoreUnavailableError, match="nothing of the call was applied"),
    ):
        run(impatient.increment("s", "u", "n"), inline=True)
    assert run(store.get_value("s", "u", "n"), inline=True) == 1
    for opened in (store, impatient):
        run(opened.close(), inline=True)


def test_a_purge_takes_the_expired_sessions_nobody_holds_and_waits_for_none(
    postgres_url: str, tmp_path: Path, run
) -> None:
    """A purge that waited for a held row could meet another purge (or a copy, which locks two
    rows) holding what it needs next: a deadlock. Its lock waits are bounded here, so a purge
    that waits fails instead of passing."""
    url = schema_url(postgres_url, tmp_path)
    store = open_store(url)
    for session in ("held", "free1", "free2"):
        run(store.patch_state(session, "u", {"a": 1}), inline=True)
        assert run(store.expire(session, "u"), inline=True) is True
    impatient = open_store(url + "&options=-c%20lock_timeout%3D500ms")
    with row_held(store, "held"):  # a writer of "held"
        assert run(impatient.purge_expired(), inline=True) == 2
        assert query(store, "SELECT session_id FROM {s}.ps_sessions") == [("held",)]
    assert run(impatient.purge_expired(), inline=True) == 1
    assert query(store, "SELECT count(*) FROM {s}.ps_sessions") == [(0,)]
    for opened in (store, impatient):
        run(opened.close(), inline=True)


#: The statements that read a session and slide its TTL (``READ_HEAD``'s).
SLIDING_READS = {
    "READ_HEAD", "GET_ALL_STATE", "GET_STATE", "GET_STATE_MATCHING", "GET_VALUE", "LIVE_HEAD",
    "READ_LOG",
}  # fmt: skip


def test_a_reads_slide_commits_without_waiting_for_a_wal_flush_and_a_write_waits(
    postgres_url: str, tmp_path: Path, run
) -> None:
    """A read acknowledges no write: the transaction of a read that slides a TTL commits with
    ``synchronous_commit`` off (set for it alone), so it does not wait for the server's WAL
    flush; a read that slides nothing leaves the server's setting, and no write turns it off."""
    import psycopg

    store = open_store(schema_url(postgres_url, tmp_path), default_ttl=60)
    run(store.patch_state("timed", "u", {"a": 1}), inline=True)
    run(store.patch_state("plain", "u", {"a": 1}), inline=True)
    run(store.touch("plain", "u", ttl=None), inline=True)
    backend = beneath(store.backend)  # the PostgreSQL backend, below the key guard
    turning_off = {
        name
        for name, text in backend._sql.items()
        if isinstance(text, str) and "set_config('synchronous_commit'" in text
    }
    assert turning_off == SLIDING_READS  # the reads: no write plan runs one of them

    def setting_after(session_id: str) -> str:
        params = {"now": time.time(), "sliding": True, "u": "u", "s": session_id}
        with psycopg.connect(backend._connections.conninfo) as conn:  # one open transaction
            found = conn.execute(backend._sql["GET_ALL_STATE"], params).fetchone()
            assert found is not None and found[2] == [["a", "1"]]
            (setting,) = conn.execute("SHOW synchronous_commit").fetchone() or ("",)
            conn.rollback()
        return str(setting)

    assert setting_after("timed") == "off"  # slid: this transaction alone commits unflushed
    assert setting_after("plain") == "on"  # no TTL, no slide: the server's own

    written: list[str] = []
    write = backend._write

    def watched(make: Any) -> Any:
        def plan() -> Any:
            steps = make()
            rows = None
            while True:
                try:
                    step = steps.send(rows)
                except StopIteration as done:
                    return done.value
                written.append(step.sql)
                rows = yield step

        return write(plan)

    backend._write = watched
    assert run(store.expire("timed", "u"), inline=True) is True
    assert run(store.increment("timed", "u", "n"), inline=True) == 1  # the full way: a new one
    assert written and not {backend._sql[name] for name in SLIDING_READS} & set(written)
    assert run(store.get_state("timed", "u"), inline=True) == {"n": 1}
    run(store.close(), inline=True)


def test_a_server_that_refuses_the_connection_is_reported_at_once(
    postgres_url: str, run, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One connection attempt, not retried as if the server were away (that would go on for
    connect_timeout, and end in "Cannot reach")."""
    import psycopg

    attempts: list[str] = []
    connect = psycopg.connect

    def counted(conninfo: str, **options: Any) -> Any:
        attempts.append(conninfo)
        return connect(conninfo, **options)

    monkeypatch.setattr(psycopg, "connect", counted)
    store = open_store(postgres_url.rsplit("/", 1)[0] + "/no_such_database")
    with pytest.raises(StoreUnavailableError, match=r"refused the connection.*no_such_database"):
        run(store.get_state("s", "u"), inline=True)
    assert len(attempts) == 1
    run(store.close(), inline=True)
