"""SQLite's file layout: each session's head row, and files of older schemas migrated on open.

Schema 4 keeps messages in a rowid table numbered by log (``ps_logs``, ``ps_entries``): an
append writes one page of messages. Schema 3 adds an index of session ids across users
(listing by prefix). Schema 2 keeps what
every write moves (version, updated_at, expires_at) in the session's head, the row of
``ps_state`` named ``''``, next to its values, so that an increment writes one page. A file
written by schema 1 (those columns in ``ps_sessions``) is migrated in one transaction the
first time it is opened.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from held import SAFETY
from praisonsession import (
    SessionCorruptedError,
    SqliteSession,
    StoreUnavailableError,
    UnsupportedFormatError,
    clock,
)
from praisonsession.stores import Branches, record_key
from praisonsession.stores.backends.sqlite import schema as sqlite_schema
from praisonsession.stores.guard import beneath

# Schema 1, exactly as praisonsession created it before the head row (PRAGMA user_version=1).
SCHEMA_1 = """
CREATE TABLE IF NOT EXISTS ps_sessions (
    user_id TEXT NOT NULL, session_id TEXT NOT NULL,
    format INTEGER NOT NULL, version INTEGER NOT NULL,
    created_at REAL NOT NULL, updated_at REAL NOT NULL,
    expires_at REAL, ttl REAL, metadata TEXT NOT NULL,
    PRIMARY KEY (user_id, session_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS ps_sessions_expiry ON ps_sessions (expires_at)
    WHERE expires_at IS NOT NULL;
CREATE TABLE IF NOT EXISTS ps_state (
    user_id TEXT NOT NULL, session_id TEXT NOT NULL, name TEXT NOT NULL, value TEXT NOT NULL,
    PRIMARY KEY (user_id, session_id, name)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS ps_modules (
    user_id TEXT NOT NULL, session_id TEXT NOT NULL, name TEXT NOT NULL, document TEXT NOT NULL,
    PRIMARY KEY (user_id, session_id, name)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS ps_imported (
    source TEXT NOT NULL, session_id TEXT NOT NULL, PRIMARY KEY (source, session_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS ps_messages (
    user_id TEXT NOT NULL, session_id TEXT NOT NULL, log TEXT NOT NULL, seq INTEGER NOT NULL,
    message TEXT NOT NULL,
    PRIMARY KEY (user_id, session_id, log, seq)
) WITHOUT ROWID;
PRAGMA user_version=1;
"""

NOW = 1_800_000_000.0
# The rows schema 1 held for four sessions, as its code wrote them: (user, id, format, version,
# created_at, updated_at, expires_at, ttl, metadata).
SESSIONS_1 = [
    ("u", "plain", 1, 6, NOW - 100, NOW - 50, None, None, '{"topic":"tea"}'),
    ("u", "ttl", 1, 2, NOW - 100, NOW - 10, NOW + 3590, 3600.0, "{}"),
    ("u", "gone", 1, 1, NOW - 100, NOW - 90, NOW - 89.9, 0.1, "{}"),
    ("u", "mods", 1, 1, NOW - 100, NOW - 100, None, None, "{}"),
]
STATE_1 = [
    ("u", "plain", "a", "1"),
    ("u", "plain", "b", '{"x":[1,2]}'),
    ("u", "plain", "hits", "5"),
    ("u", "ttl", "n", "2.5"),
    ("u", "gone", "old", "1"),
]


def make_schema_1_file(path: Path) -> None:
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.executescript(SCHEMA_1)
        db.executemany("INSERT INTO ps_sessions VALUES (?,?,?,?,?,?,?,?,?)", SESSIONS_1)
        db.executemany("INSERT INTO ps_state VALUES (?,?,?,?)", STATE_1)
        db.execute("INSERT INTO ps_modules VALUES ('u', 'mods', 'agent', '{\"name\":\"x\"}')")
        db.executemany(
            "INSERT INTO ps_messages VALUES ('u', 'mods', 'agent.memory', ?, ?)",
            [(i, f'{{"role":"user","content":"m{i}"}}') for i in range(3)],
        )
    finally:
        db.close()


# Schema 3, exactly as praisonsession created a new file before ps_logs (PRAGMA user_version=3);
# schema 2 is the same without ps_sessions_by_id.
SCHEMA_3 = """
CREATE TABLE ps_sessions (
    user_id TEXT NOT NULL, session_id TEXT NOT NULL, format INTEGER NOT NULL,
    created_at REAL NOT NULL, ttl REAL, metadata TEXT NOT NULL,
    PRIMARY KEY (user_id, session_id)
) WITHOUT ROWID;
CREATE TABLE ps_state (
    user_id TEXT NOT NULL, session_id TEXT NOT NULL, name TEXT NOT NULL, value TEXT NOT NULL,
    version INTEGER, updated_at REAL, expires_at REAL,
    PRIMARY KEY (user_id, session_id, name)
) WITHOUT ROWID;
CREATE INDEX ps_state_expiry ON ps_state (expires_at) WHERE expires_at IS NOT NULL;
CREATE TABLE ps_modules (
    user_id TEXT NOT NULL, session_id TEXT NOT NULL, name TEXT NOT NULL, document TEXT NOT NULL,
    PRIMARY KEY (user_id, session_id, name)
) WITHOUT ROWID;
CREATE TABLE ps_imported (
    source TEXT NOT NULL, session_id TEXT NOT NULL, PRIMARY KEY (source, session_id)
) WITHOUT ROWID;
CREATE TABLE ps_messages (
    user_id TEXT NOT NULL, session_id TEXT NOT NULL, log TEXT NOT NULL, seq INTEGER NOT NULL,
    message TEXT NOT NULL,
    PRIMARY KEY (user_id, session_id, log, seq)
) WITHOUT ROWID;
CREATE INDEX ps_sessions_by_id ON ps_sessions (session_id, user_id);
PRAGMA user_version=3;
"""
# What schema 3's code wrote for three sessions of two users: (user, session, log, messages).
LOGS_3 = [
    ("ann", "chat", "agent.memory", 3),
    ("ann", "chat", "agent.memory.notes", 2),
    ("ann", "chat", "notes", 1),
    ("ann", "empty", "log", 0),
    ("bob", "chat", "agent.memory", 300),
]


def said(user: str, session: str, log: str, seq: int) -> dict[str, str]:
    return {"role": "user", "content": f"{user}/{session}/{log}/{seq}"}


def make_schema_3_file(path: Path, version: int = 3) -> None:
    """A file as schema 3's (or, with ``version=2``, schema 2's) code left it."""
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        script = (
            SCHEMA_3 if version == 3 else SCHEMA_3.replace("CREATE INDEX ps_sessions_by_id", "--")
        )
        db.executescript(script.replace("user_version=3", f"user_version={version}"))
        for user, session in {(user, session) for user, session, _, _ in LOGS_3}:
            db.execute(
                "INSERT INTO ps_sessions VALUES (?,?,1,?,NULL,'{}')", (user, session, NOW - 100)
            )
            db.execute(
                "INSERT INTO ps_state VALUES (?,?,'','',4,?,NULL)", (user, session, NOW - 50)
            )
            db.execute("INSERT INTO ps_state VALUES (?,?,'n','7',NULL,NULL,NULL)", (user, session))
            db.execute("INSERT INTO ps_modules VALUES (?,?,'agent','{}')", (user, session))
        for user, session, log, count in LOGS_3:
            db.executemany(
                "INSERT INTO ps_messages VALUES (?,?,?,?,?)",
                [
                    (user, session, log, i, json.dumps(said(user, session, log, i)))
                    for i in range(count)
                ],
            )
    finally:
        db.close()


def columns(path: Path, table: str) -> list[str]:
    with sqlite3.connect(path) as db:
        return [row[1] for row in db.execute(f"PRAGMA table_info({table})")]


def user_version(path: Path) -> int:
    db = sqlite3.connect(path)
    try:
        return db.execute("PRAGMA user_version").fetchone()[0]
    finally:
        db.close()


@pytest.fixture
def at_now():
    with clock.frozen(NOW) as now:
        yield now


def test_a_schema_1_file_is_migrated_on_open_and_keeps_every_session_as_it_was(
    tmp_path: Path, run, at_now
) -> None:
    path = tmp_path / "old.db"
    make_schema_1_file(path)
    store = SqliteSession(path, sliding_ttl=False)
    plain = run(store.get_info("plain", "u"))
    assert (plain.version, plain.created_at, plain.updated_at) == (6, NOW - 100, NOW - 50)
    assert (plain.expires_at, plain.ttl, dict(plain.metadata)) == (None, None, {"topic": "tea"})
    timed = run(store.get_info("ttl", "u"))
    assert (timed.version, timed.updated_at, timed.expires_at, timed.ttl) == (
        2,
        NOW - 10,
        NOW + 3590,
        3600.0,
    )
    assert run(store.get_info("gone", "u")) is None  # expired then, expired now
    assert run(store.get_state("plain", "u")) == {"a": 1, "b": {"x": [1, 2]}, "hits": 5}
    assert run(store.get_state("ttl", "u")) == {"n": 2.5}
    assert run(store.read_messages("mods", "u", "agent.memory")) == [
        {"role": "user", "content": f"m{i}"} for i in range(3)
    ]
    assert [i.session_id for i in run(store.list_sessions("u"))] == ["mods", "plain", "ttl"]

    assert user_version(path) == sqlite_schema.SCHEMA_VERSION
    assert columns(path, "ps_sessions") == [
        "user_id",
        "session_id",
        "format",
        "created_at",
        "ttl",
        "metadata",
    ]
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        heads = db.execute(
            "SELECT session_id, value, version, updated_at, expires_at FROM ps_state "
            "WHERE name='' ORDER BY session_id"
        ).fetchall()
    assert heads == [
        ("gone", "", 1, NOW - 90, NOW - 89.9),
        ("mods", "", 1, NOW - 100, None),
        ("plain", "", 6, NOW - 50, None),
        ("ttl", "", 2, NOW - 10, NOW + 3590),
    ]

    # and it goes on from there: versions move, the expired one is purged
    at_now.advance(1.0)
    assert run(store.increment("plain", "u", "hits")) == 6
    info = run(store.get_info("plain", "u"))
    assert (info.version, info.updated_at) == (7, NOW + 1)
    assert run(store.purge_expired()) == 1
    assert run(store.get_state("gone", "u")) == {}
    run(store.close())
    reopened = SqliteSession(path)
    assert run(reopened.get_value("plain", "u", "hits")) == 6
    run(reopened.close())


def test_a_failed_migration_leaves_the_file_as_it_was(
    tmp_path: Path, run, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "old.db"
    make_schema_1_file(path)
    failing = (*sqlite_schema.MIGRATE_FROM_1, "INSERT INTO no_such_table VALUES (1)")
    monkeypatch.setitem(sqlite_schema.MIGRATIONS, 1, failing)
    store = SqliteSession(path)
    with pytest.raises(StoreUnavailableError):
        run(store.get_state("plain", "u"))
    run(store.close())
    assert user_version(path) == 1
    assert "version" in columns(path, "ps_sessions")
    assert columns(path, "ps_state") == ["user_id", "session_id", "name", "value"]
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM ps_state").fetchone() == (len(STATE_1),)

    monkeypatch.undo()  # the real migration, on the untouched file
    store = SqliteSession(path)
    assert run(store.get_value("plain", "u", "hits")) == 5
    run(store.close())
    assert user_version(path) == sqlite_schema.SCHEMA_VERSION


def test_a_store_that_saw_the_old_schema_migrates_nothing_once_another_did(
    tmp_path: Path, run
) -> None:
    """Two processes may both read user_version 1; the second to take the write lock reads
    it again and leaves the file alone."""
    path = tmp_path / "old.db"
    make_schema_1_file(path)
    first, second = SqliteSession(path), SqliteSession(path)
    seen = iter([1])
    real = second.backend._schema_version
    beneath(second.backend)._schema_version = lambda conn: next(seen, None) or real(conn)  # type: ignore
    assert run(first.increment("plain", "u", "hits")) == 6
    assert run(second.increment("plain", "u", "hits")) == 7
    assert run(second.get_info("plain", "u")).version == 8
    for store in (first, second):
        run(store.close())
    assert user_version(path) == sqlite_schema.SCHEMA_VERSION


def test_a_schema_2_file_gains_the_index_that_lists_ids_across_users(tmp_path: Path, run) -> None:
    path = tmp_path / "two.db"
    make_schema_3_file(path, version=2)
    store = SqliteSession(path)
    found = run(store.backend.list_records_by_prefix("", limit=10, after=None))
    tail = store.backend.read_log(
        record_key("chat", "bob"), path="agent.memory", start=-1, stop=None
    )
    assert run(tail) == [said("bob", "chat", "agent.memory", 299)]
    run(store.close())
    assert sorted((info.user_id, info.session_id) for info in found) == [
        ("ann", "chat"),
        ("ann", "empty"),
        ("bob", "chat"),
    ]
    assert user_version(path) == sqlite_schema.SCHEMA_VERSION
    with sqlite3.connect(path) as db:
        indexes = {row[1] for row in db.execute("PRAGMA index_list(ps_sessions)")}
    assert "ps_sessions_by_id" in indexes


def test_a_schema_3_file_keeps_every_message_in_its_log_once_migrated(
    tmp_path: Path, run, at_now
) -> None:
    path = tmp_path / "three.db"
    make_schema_3_file(path)
    store = SqliteSession(path)
    for user, session, log, count in LOGS_3:
        assert run(store.message_count(session, user, log)) == count
        assert run(store.read_messages(session, user, log)) == [
            said(user, session, log, i) for i in range(count)
        ]
        tail = store.backend.read_log(record_key(session, user), path=log, start=-2, stop=None)
        assert run(tail) == [said(user, session, log, i) for i in range(max(0, count - 2), count)]
    info = run(store.get_info("chat", "ann"))
    assert (info.version, info.updated_at, run(store.get_value("chat", "ann", "n"))) == (
        4,
        NOW - 50,
        7,
    )
    stored = run(store.backend.read_modules(record_key("chat", "ann"), names=["agent"]))
    assert stored.logs == {
        log: [said("ann", "chat", log, i) for i in range(count)]
        for user, session, log, count in LOGS_3
        if (user, session) == ("ann", "chat") and log.startswith("agent.") and count
    }
    assert user_version(path) == sqlite_schema.SCHEMA_VERSION == 4
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        kinds = dict(db.execute("SELECT name, type FROM sqlite_master WHERE name LIKE 'ps_%'"))
        seen = db.execute("SELECT COUNT(*) FROM ps_messages WHERE user_id='bob'").fetchone()
    assert (kinds["ps_messages"], kinds["ps_logs"], kinds["ps_entries"]) == (
        "view",
        "table",
        "table",
    )
    assert seen == (300,)

    # and the logs go on from there, each numbering its messages on
    assert (
        run(store.append_messages("chat", "ann", "notes", [said("ann", "chat", "notes", 1)])) == 2
    )
    assert run(store.append_messages("new", "ann", "notes", [said("ann", "new", "notes", 0)])) == 1
    assert run(store.read_messages("chat", "ann", "notes")) == [
        said("ann", "chat", "notes", i) for i in range(2)
    ]
    assert run(store.read_messages("new", "ann", "notes")) == [said("ann", "new", "notes", 0)]
    assert run(store.read_messages("chat", "bob", "agent.memory", 299)) == [
        said("bob", "chat", "agent.memory", 299)
    ]
    assert run(store.delete_session("chat", "ann"))
    run(store.close())
    with sqlite3.connect(path) as db:
        left = db.execute("SELECT DISTINCT user_id, session_id FROM ps_messages").fetchall()
    assert sorted(left) == [("ann", "new"), ("bob", "chat")]


def test_a_failed_migration_of_a_schema_3_file_keeps_its_messages_table(
    tmp_path: Path, run, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "three.db"
    make_schema_3_file(path)
    failing = (*sqlite_schema.MIGRATE_FROM_3, "INSERT INTO no_such_table VALUES (1)")
    monkeypatch.setitem(sqlite_schema.MIGRATIONS, 3, failing)
    store = SqliteSession(path)
    with pytest.raises(StoreUnavailableError):
        run(store.message_count("chat", "bob", "agent.memory"))
    run(store.close())
    assert user_version(path) == 3
    with sqlite3.connect(path) as db:
        kinds = dict(db.execute("SELECT name, type FROM sqlite_master WHERE name LIKE 'ps_%'"))
        held = db.execute("SELECT COUNT(*) FROM ps_messages").fetchone()
    assert (kinds["ps_messages"], "ps_logs" in kinds, "ps_entries" in kinds) == (
        "table",
        False,
        False,
    )
    assert held == (sum(count for *_, count in LOGS_3),)

    monkeypatch.undo()  # the real migration, on the untouched file
    store = SqliteSession(path)
    assert run(store.message_count("chat", "bob", "agent.memory")) == 300
    run(store.close())
    assert user_version(path) == sqlite_schema.SCHEMA_VERSION


def test_a_file_of_a_newer_schema_is_refused(tmp_path: Path, run) -> None:
    path = tmp_path / "new.db"
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version={sqlite_schema.SCHEMA_VERSION + 1}")
    store = SqliteSession(path)
    with pytest.raises(UnsupportedFormatError, match="Upgrade praisonsession"):
        run(store.get_state("s", "u"))
    run(store.close())


def wal_frames(path: Path) -> int:
    """Frames in the WAL since the last checkpoint."""
    db = sqlite3.connect(path, isolation_level=None)
    try:
        return db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1]
    finally:
        db.close()


def test_an_increment_of_a_small_session_writes_one_page(tmp_path: Path, run) -> None:
    """The head and the value sit on one B-tree page: one WAL frame per commit."""
    path = tmp_path / "s.db"
    store = SqliteSession(path)
    run(store.patch_state("s", "u", {"a": "x" * 100, "hits": 0}))
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    for _ in range(10):
        run(store.increment("s", "u", "hits"))
    assert wal_frames(path) == 10
    assert run(store.get_info("s", "u")).version == 11
    run(store.close())


def test_an_append_to_a_log_writes_its_page_and_the_head(tmp_path: Path, run) -> None:
    """A message the size of a LangGraph checkpoint (about 1 KB, four to a page): the head's
    page, the page the message goes to, and now and then a new page with its parent and the
    file's header. Schema 3 wrote about three pages of messages per append here."""
    path = tmp_path / "s.db"
    store = SqliteSession(path, durability="power")
    message = {"role": "user", "content": "x" * 900}
    run(store.append_messages("s", "u", "log", [message] * 20))
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    for _ in range(40):
        run(store.append_messages("s", "u", "log", [message]))
    assert 80 <= wal_frames(path) <= 100
    assert run(store.message_count("s", "u", "log")) == 60
    run(store.close())


def test_a_log_never_reaches_into_the_rows_of_the_log_numbered_before_it(
    tmp_path: Path, run
) -> None:
    """Logs share one table, each numbering its rows from its id: bounds below zero stop at
    the log's own first row."""
    store = SqliteSession(tmp_path / "s.db")
    for log in ("a", "b"):
        run(store.append_messages("s", "u", log, [{"n": i} for i in range(3)]))
    key = record_key("s", "u")
    assert run(store.backend.read_log(key, path="b", start=-9, stop=None)) == [
        {"n": i} for i in range(3)
    ]
    assert run(store.backend.read_log(key, path="b", start=0, stop=-1)) == []
    assert run(store.backend.truncate_log(key, path="b", length=-2, expected=None)) == [
        {"n": i} for i in range(3)
    ]
    assert run(store.read_messages("s", "u", "a")) == [{"n": i} for i in range(3)]
    assert run(store.message_count("s", "u", "b")) == 0
    run(store.close())


def test_the_head_row_is_not_state_and_is_not_copied(tmp_path: Path, run) -> None:
    store = SqliteSession(tmp_path / "s.db")
    run(store.patch_state("s", "u", {"a": 1}))
    run(store.increment("s", "u", "n"))
    assert run(store.get_state("s", "u")) == {"a": 1, "n": 1}
    run(store.replace_state("s", "u", {"b": 2}))
    assert run(store.get_state("s", "u")) == {"b": 2}
    assert run(store.get_info("s", "u")).version == 3  # the head survived the replace
    fork = run(Branches(store.backend).fork("s", "u", "f"))
    assert (fork.version, run(store.get_state("f", "u"))) == (1, {"b": 2})
    assert run(store.get_info("s", "u")).version == 3
    with sqlite3.connect(store.backend.path) as db:
        heads = db.execute(
            "SELECT session_id, version FROM ps_state WHERE name='' ORDER BY session_id"
        ).fetchall()
    assert heads == [("f", 1), ("s", 3)]
    run(store.close())


@pytest.mark.parametrize(
    "damage, found",
    [
        ("DELETE FROM ps_state WHERE name=''", "head row"),
        ("UPDATE ps_state SET version='x' WHERE name=''", "version"),
        ("UPDATE ps_state SET version=-1 WHERE name=''", "version"),
        ("UPDATE ps_state SET expires_at='x' WHERE name=''", "expires_at"),
        ("UPDATE ps_sessions SET ttl='x'", "ttl"),
        ("UPDATE ps_sessions SET format=-1", "format"),
        ("UPDATE ps_sessions SET format=2", "Upgrade praisonsession"),  # a newer format
    ],
)
def test_a_damaged_head_is_corruption_for_reads_and_writes(
    tmp_path: Path, run, damage: str, found: str
) -> None:
    store = SqliteSession(tmp_path / "s.db")
    run(store.patch_state("s", "u", {"hits": 1}))
    with sqlite3.connect(store.backend.path) as db:
        db.execute(damage)
    for call in (
        lambda: store.get_info("s", "u"),
        lambda: store.increment("s", "u", "hits"),
        lambda: store.patch_state("s", "u", {"a": 1}),
        lambda: store.append_messages("s", "u", "log", [{"role": "user"}]),
    ):
        with pytest.raises(SessionCorruptedError, match=found):
            run(call())
    run(store.close())


@pytest.mark.parametrize(
    "damage, found",
    [
        ("DELETE FROM ps_state WHERE name='' AND session_id='s'", "head row"),
        ("UPDATE ps_state SET version='x' WHERE name='' AND session_id='s'", "version"),
        ("UPDATE ps_state SET expires_at='x' WHERE name='' AND session_id='s'", "expires_at"),
        ("UPDATE ps_sessions SET ttl='x' WHERE session_id='s'", "ttl"),
        ("UPDATE ps_sessions SET format=2 WHERE session_id='s'", "Upgrade praisonsession"),
        ("UPDATE ps_sessions SET metadata='{\"cut' WHERE session_id='s'", "metadata"),
        ("UPDATE ps_sessions SET metadata='[]' WHERE session_id='s'", "metadata"),
        ("UPDATE ps_sessions SET metadata=x'7b7d' WHERE session_id='s'", "metadata"),
    ],
)
def test_a_listing_names_the_damaged_record_among_sound_ones(
    tmp_path: Path, run, damage: str, found: str
) -> None:
    """A page of a listing is decoded in one pass; a damaged record among sound ones is still
    corruption naming that record, by either listing (one user's, every user's by prefix)."""
    store = SqliteSession(tmp_path / "s.db")
    for name in ("a", "s", "z"):
        run(store.patch_state(name, "u", {"hits": 1}))
    assert [info.session_id for info in run(store.list_sessions("u"))] == ["a", "s", "z"]
    with sqlite3.connect(store.backend.path) as db:
        db.execute(damage)
    for call in (
        lambda: store.list_sessions("u"),
        lambda: store.backend.list_records_by_prefix("", limit=10, after=None),
    ):
        with pytest.raises(SessionCorruptedError, match=found) as raised:
            run(call())
        assert "'s'" in str(raised.value)
    run(store.close())


def test_a_damaged_updated_at_is_reported_and_the_next_write_replaces_it(
    tmp_path: Path, run
) -> None:
    store = SqliteSession(tmp_path / "s.db")
    run(store.patch_state("s", "u", {"hits": 1}))
    with sqlite3.connect(store.backend.path) as db:
        db.execute("UPDATE ps_state SET updated_at='x' WHERE name=''")
    with pytest.raises(SessionCorruptedError, match="updated_at"):
        run(store.get_info("s", "u"))
    assert run(store.increment("s", "u", "hits")) == 2  # a write sets it anew, as ever
    assert run(store.get_info("s", "u")).version == 2
    run(store.close())


WRITES = {
    "increment": lambda store: store.increment("s", "u", "hits"),
    "patch_state": lambda store: store.patch_state("s", "u", {"a": 1}),
    "append_messages": lambda store: store.append_messages("s", "u", "log", [{"role": "user"}]),
    "set_metadata": lambda store: store.set_metadata("s", "u", topic="tea"),
}


@pytest.mark.parametrize("write", sorted(WRITES))
@pytest.mark.parametrize("sliding", [True, False])
def test_every_write_moves_the_head_by_one_version_and_slides_its_expiry(
    tmp_path: Path, run, at_now, write: str, sliding: bool
) -> None:
    store = SqliteSession(tmp_path / "s.db", sliding_ttl=sliding)
    run(store.create_session("s", "u", ttl=10.0))
    at_now.advance(4.0)
    run(WRITES[write](store))
    info = run(store.get_info("s", "u"))
    assert (info.version, info.updated_at) == (1, NOW + 4)
    assert info.expires_at == (NOW + 14 if sliding else NOW + 10)
    at_now.advance(4.0)
    run(WRITES[write](store))
    info = run(store.get_info("s", "u"))
    assert (info.version, info.updated_at) == (2, NOW + 8)
    assert info.expires_at == (NOW + 18 if sliding else NOW + 10)
    at_now.advance(11.0 if sliding else 3.0)  # past its expiry, by the head
    assert run(store.purge_expired()) == 1
    assert run(store.get_info("s", "u")) is None
    run(store.close())


def test_on_an_event_loop_checkpoints_run_off_the_loop(tmp_path: Path) -> None:
    """A checkpoint fsyncs the file: on a loop's connection SQLite's own auto-checkpoint is
    off, and every CHECKPOINT_EVERY commits one runs in a worker thread instead."""
    import asyncio
    import threading

    from praisonsession.stores.backends.sqlite import backend as sqlite_module

    store = SqliteSession(tmp_path / "loop.db")
    ran_on: list[str] = []
    ran = threading.Event()
    checkpoint = store.backend._checkpoint

    def counted() -> None:
        ran_on.append(threading.current_thread().name)
        ran.set()
        checkpoint()

    beneath(store.backend)._checkpoint = counted  # type: ignore[method-assign]
    commits = sqlite_module.CHECKPOINT_EVERY * 3
    loop_thread = threading.current_thread().name  # asyncio.run's loop runs here

    async def main() -> int:
        for i in range(commits):
            await store.increment("s", "u", "n", 1)
            if i % 50 == 0:
                await asyncio.sleep(0.01)  # the worker thread gets its turn
        assert await asyncio.to_thread(ran.wait, SAFETY)  # the first checkpoint has begun
        conn = store.backend._here().conn
        assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
        return await store.increment("s", "u", "n", 0)

    assert asyncio.run(main()) == commits
    # asyncio.run waited for the executor's jobs: every checkpoint called for has run
    assert len(ran_on) >= 2 and loop_thread not in ran_on, ran_on
    asyncio.run(store.close())
    wal = tmp_path / "loop.db-wal"
    assert not wal.exists() or wal.stat().st_size < 4 * 1024 * 1024


def test_on_an_event_loop_the_wal_starts_again_while_commits_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker's checkpoint copies the WAL to its last frame even while the loop keeps
    committing, so the WAL starts again from its beginning instead of growing with every
    commit (and every commit's fsync journaling the file's new size)."""
    import asyncio

    from praisonsession.stores.backends.sqlite import backend as sqlite_module

    monkeypatch.setattr(sqlite_module, "CHECKPOINT_EVERY", 50)
    store = SqliteSession(tmp_path / "loop.db")
    wal = tmp_path / "loop.db-wal"
    sizes: list[int] = []

    async def main() -> None:
        for _ in range(6):  # six checkpoints, each with commits landing while it runs
            for _ in range(50):
                await store.append_messages(
                    "s", "u", "chat", [{"role": "user", "content": "x" * 300}]
                )
            while beneath(store.backend)._file.checkpointing:  # the file's, shared by its stores
                await store.append_messages("s", "u", "chat", [{"role": "user", "content": "y"}])
                await asyncio.sleep(0.001)
            sizes.append(wal.stat().st_size)

    asyncio.run(main())
    messages = asyncio.run(store.read_messages("s", "u", "chat"))
    assert len(messages) >= 300 and messages[0]["content"] == "x" * 300
    asyncio.run(store.close())
    # the WAL of the first round is reused from then on, never grown by the rounds after
    assert max(sizes[1:]) <= sizes[0] * 1.5, sizes


@pytest.mark.parametrize("why", ["no gap found", "commits outran it"])
def test_a_write_waits_while_the_checkpoint_holds_writers_back(tmp_path: Path, why: str) -> None:
    """A checkpoint whose RESTART found no gap between commits, or that the loop's commits
    outran by a quarter of CHECKPOINT_EVERY, holds this process's next writes back until it
    ends (on a loaded machine the WAL grew by a whole round otherwise); the held write then
    goes through, and a checkpoint that holds nothing back leaves writes alone."""
    import asyncio

    from praisonsession.stores.backends.sqlite import backend as sqlite_module

    store = SqliteSession(tmp_path / "held.db")
    shared = beneath(store.backend)._file

    async def main() -> list[str]:
        await store.append_messages("s", "u", "chat", [{"role": "user", "content": "first"}])
        shared.checkpointing = True  # as the worker's checkpoint sets it
        await store.append_messages("s", "u", "chat", [{"role": "user", "content": "beside"}])
        if why == "no gap found":
            shared.held = True
        else:
            shared.commits = sqlite_module.CHECKPOINT_EVERY // 4
        held = asyncio.create_task(
            store.append_messages("s", "u", "chat", [{"role": "user", "content": "held"}])
        )
        for _ in range(20):
            await asyncio.sleep(0.005)
        assert not held.done()  # waits for the checkpoint, however long the loop turns
        shared.held = shared.checkpointing = False  # as the worker's checkpoint ends
        await held
        return [m["content"] for m in await store.read_messages("s", "u", "chat")]

    assert asyncio.run(main()) == ["first", "beside", "held"]
    asyncio.run(store.close())


def test_a_loop_whose_executor_is_shut_down_still_writes_and_checkpoints_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A loop ending (its default executor shut down) has no worker for the checkpoint its
    commits call for: the write that called for it still returns its value, and the file is
    left with no checkpoint marked running, so the next loop's writers neither wait for one
    nor go without."""
    import asyncio

    from praisonsession.stores.backends.sqlite import backend as sqlite_module

    monkeypatch.setattr(sqlite_module, "CHECKPOINT_EVERY", 5)
    store = SqliteSession(tmp_path / "ending.db")
    shared = beneath(store.backend)._file

    async def ending() -> list[int]:
        await asyncio.get_running_loop().shutdown_default_executor()
        return [await store.increment("s", "u", "n") for _ in range(12)]

    assert asyncio.run(ending()) == list(range(1, 13))
    assert not shared.checkpointing

    async def next_loop() -> int:
        for _ in range(5):
            await store.increment("s", "u", "n")
        while shared.checkpointing:  # the worker's, on this loop
            await asyncio.sleep(0.001)
        return await store.increment("s", "u", "n", 0)

    assert asyncio.run(next_loop()) == 17
    asyncio.run(store.close())
