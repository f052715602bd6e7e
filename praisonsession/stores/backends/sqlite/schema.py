"""The SQLite file: its tables, their version and the migrations from older ones, and the
statements the hot paths run (kept apart from ``sqlite.py``, which says when each runs).

Each session has a *head*: the row of ``ps_state`` named ``''`` (no state key can be empty)
holding what every write moves (``version``, ``updated_at``, ``expires_at``); the rest of the
session is its row of ``ps_sessions``. See ``sqlite.py`` for why.

A message log is a row of ``ps_logs`` (its name and a number, ``id``) and its messages are
rows of ``ps_entries``, message ``seq`` of log ``id`` being row ``id * SPAN + seq``: a rowid
table, so an appended message goes to the end of its log's range, and to the right edge of the
table when its log is the newest (SQLite then starts a new page without moving any row), and
the table's inner pages hold row numbers only. Schema 3 kept messages in a ``WITHOUT ROWID``
table keyed by (user, session, log, seq): every inner page held whole messages (four to a
page for a LangGraph checkpoint), and an append split pages as in the middle of an index, so a
checkpoint wrote about three pages of messages where it now writes one and a bit. The view
``ps_messages`` shows them as schema 3 did, for people reading the file.
"""

from __future__ import annotations

import math
from typing import Any

from ...._internal.json_data import utf8_encodable
from ...backend import Fields, Newest
from ...record import FORMAT_VERSION

SCHEMA_VERSION = 4
"""``PRAGMA user_version`` of the file; an older file is migrated when first opened."""

# Schema 3 lists a prefix of session ids across users (``list_records_by_prefix``).
BY_ID_INDEX = "CREATE INDEX ps_sessions_by_id ON ps_sessions (session_id, user_id)"
EXPIRY_INDEX = "CREATE INDEX ps_state_expiry ON ps_state (expires_at) WHERE expires_at IS NOT NULL"
SESSIONS_TABLE = """CREATE TABLE {name} (
    user_id TEXT NOT NULL, session_id TEXT NOT NULL, format INTEGER NOT NULL,
    created_at REAL NOT NULL, ttl REAL, metadata TEXT NOT NULL,
    PRIMARY KEY (user_id, session_id)
) WITHOUT ROWID"""
#: Rows of ps_entries each log may number its messages in: a log holds fewer than 2**32
#: messages, and ids stay below 2**31 (SQLite's row numbers are 64-bit signed).
SPAN = 1 << 32
MAX_LOG_ID = (1 << 31) - 1
# Schema 4 moves the messages out of ps_messages (see the module's docstring).
LOG_TABLES = (
    """CREATE TABLE ps_logs (
    id INTEGER PRIMARY KEY, user_id TEXT NOT NULL, session_id TEXT NOT NULL, log TEXT NOT NULL,
    UNIQUE (user_id, session_id, log)
)""",
    "CREATE TABLE ps_entries (id INTEGER PRIMARY KEY, message TEXT NOT NULL)",
)
# The rows of ps_entries of log l (as a join condition).
IN_LOG = f"e.id>=l.id*{SPAN} AND e.id<(l.id+1)*{SPAN}"
MESSAGES_VIEW = (
    "CREATE VIEW ps_messages AS SELECT l.user_id AS user_id, l.session_id AS session_id, "
    f"l.log AS log, e.id-l.id*{SPAN} AS seq, e.message AS message "
    f"FROM ps_logs l JOIN ps_entries e ON {IN_LOG}"
)
# A new file. In ps_state, version, updated_at and expires_at are set on the head row only.
SCHEMA = (
    SESSIONS_TABLE.format(name="ps_sessions"),
    """CREATE TABLE ps_state (
    user_id TEXT NOT NULL, session_id TEXT NOT NULL, name TEXT NOT NULL, value TEXT NOT NULL,
    version INTEGER, updated_at REAL, expires_at REAL,
    PRIMARY KEY (user_id, session_id, name)
) WITHOUT ROWID""",
    EXPIRY_INDEX,
    """CREATE TABLE ps_modules (
    user_id TEXT NOT NULL, session_id TEXT NOT NULL, name TEXT NOT NULL, document TEXT NOT NULL,
    PRIMARY KEY (user_id, session_id, name)
) WITHOUT ROWID""",
    """CREATE TABLE ps_imported (
    source TEXT NOT NULL, session_id TEXT NOT NULL, PRIMARY KEY (source, session_id)
) WITHOUT ROWID""",
    *LOG_TABLES,
    MESSAGES_VIEW,
    BY_ID_INDEX,
)
# Schema 1 kept version, updated_at and expires_at in ps_sessions: they move to each session's
# head row, and ps_sessions is rebuilt without them (its expiry index goes with it). Run in
# one transaction with the user_version, so a file is either all 1 or all 2.
MIGRATE_FROM_1 = (
    "ALTER TABLE ps_state ADD COLUMN version INTEGER",
    "ALTER TABLE ps_state ADD COLUMN updated_at REAL",
    "ALTER TABLE ps_state ADD COLUMN expires_at REAL",
    # OR REPLACE: a hand-made state row named '' could not be read as state anyway
    "INSERT OR REPLACE INTO ps_state (user_id, session_id, name, value, version, updated_at,"
    " expires_at) SELECT user_id, session_id, '', '', version, updated_at, expires_at"
    " FROM ps_sessions",
    SESSIONS_TABLE.format(name="ps_sessions_2"),
    "INSERT INTO ps_sessions_2 (user_id, session_id, format, created_at, ttl, metadata)"
    " SELECT user_id, session_id, format, created_at, ttl, metadata FROM ps_sessions",
    "DROP TABLE ps_sessions",
    "ALTER TABLE ps_sessions_2 RENAME TO ps_sessions",
    EXPIRY_INDEX,
)
# Schema 3's messages, each log numbered in the order of its key (its messages' rows follow
# one another), then its table dropped (secure_delete zeroes its pages) and its view made.
MIGRATE_FROM_3 = (
    *LOG_TABLES,
    "INSERT INTO ps_logs (user_id, session_id, log) "
    "SELECT DISTINCT user_id, session_id, log FROM ps_messages ORDER BY 1, 2, 3",
    f"INSERT INTO ps_entries (id, message) SELECT l.id*{SPAN}+m.seq, m.message "
    "FROM ps_messages m JOIN ps_logs l "
    "ON l.user_id=m.user_id AND l.session_id=m.session_id AND l.log=m.log ORDER BY 1",
    "DROP TABLE ps_messages",
    MESSAGES_VIEW,
)
MIGRATIONS = {1: MIGRATE_FROM_1, 2: (BY_ID_INDEX,), 3: MIGRATE_FROM_3}  # from N to N + 1

# What one session owns, by (user_id, session_id); its messages go first (SESSION_ENTRIES).
TABLES = ("ps_sessions", "ps_state", "ps_modules", "ps_logs")
SESSION_ENTRIES = (
    f"DELETE FROM ps_entries WHERE id IN (SELECT e.id FROM ps_logs l JOIN ps_entries e ON {IN_LOG} "
    "WHERE l.user_id=? AND l.session_id=?)"
)
# A log's id and its last row (NULL when empty), or no row when the log was never written.
LOG_END = (
    "SELECT l.id, (SELECT e.id FROM ps_entries e WHERE "
    f"{IN_LOG} ORDER BY e.id DESC LIMIT 1) FROM ps_logs l "
    "WHERE l.user_id=? AND l.session_id=? AND l.log=?"
)
NEW_LOG = "INSERT INTO ps_logs (user_id, session_id, log) VALUES (?,?,?)"
APPEND = "INSERT INTO ps_entries (id, message) VALUES (?,?)"
# One message appended to log ?3 at seq ?4 >= 1, only if the log holds ?4 messages: its row
# ?4 - 1 is there and none after it (what LOG_END would say), with no read before.
APPEND_AT = (
    f"INSERT INTO ps_entries (id, message) SELECT l.id*{SPAN}+?4, ?5 FROM ps_logs l "
    "WHERE l.user_id=?1 AND l.session_id=?2 AND l.log=?3 "
    f"AND EXISTS (SELECT 1 FROM ps_entries e WHERE e.id=l.id*{SPAN}+?4-1) "
    f"AND NOT EXISTS (SELECT 1 FROM ps_entries e WHERE e.id>=l.id*{SPAN}+?4 "
    f"AND e.id<(l.id+1)*{SPAN})"
)
# Rows ?1 <= id < ?2 (of one log).
ENTRIES = "SELECT message FROM ps_entries WHERE id>=? AND id<? ORDER BY id"
CUT = "DELETE FROM ps_entries WHERE id>=? AND id<?"
# A log's messages seq ?4 <= seq < ?5 (?5 at most SPAN), and its last ?4 (a tail).
LOG_RANGE = (
    "SELECT e.message FROM ps_logs l, ps_entries e WHERE l.user_id=?1 AND l.session_id=?2 "
    f"AND l.log=?3 AND e.id>=l.id*{SPAN}+?4 AND e.id<l.id*{SPAN}+?5 ORDER BY e.id"
)
LOG_TAIL = (
    "SELECT e.message FROM ps_logs l, ps_entries e WHERE l.user_id=?1 AND l.session_id=?2 "
    f"AND l.log=?3 AND {IN_LOG} ORDER BY e.id DESC LIMIT ?4"
)
# The messages of the logs named ?3 or ?3.* (?4 = ?3 + '/', ?5 = ?3 + '.'): one range of
# ps_logs's key ([name, name/) holds name and name.*); an OR of the two would read them all.
MODULE_LOGS = (
    f"SELECT l.log, e.message FROM ps_logs l JOIN ps_entries e ON {IN_LOG} "
    "WHERE l.user_id=?1 AND l.session_id=?2 AND l.log>=?3 AND l.log<?4 "
    "AND (l.log=?3 OR l.log>=?5) ORDER BY l.log, e.id"
)
# The documents named (?3...) of a session, each with whether logs lie below it (MODULE_LOGS's
# range, one probe of ps_logs's key): only a document with logs costs another query.
MODULE_DOCUMENTS = (
    "SELECT m.name, m.document, EXISTS (SELECT 1 FROM ps_logs l WHERE l.user_id=?1 "
    "AND l.session_id=?2 AND l.log>=m.name AND l.log<m.name||'/' "
    "AND (l.log=m.name OR l.log>=m.name||'.')) FROM ps_modules m "
    "WHERE m.user_id=?1 AND m.session_id=?2 AND m.name IN ({names})"
)
LOG_COUNTS = (
    f"SELECT l.log, COUNT(*) FROM ps_logs l JOIN ps_entries e ON {IN_LOG} "
    "WHERE l.user_id=? AND l.session_id=? GROUP BY l.log"
)
LOGS_OF = "SELECT id, log FROM ps_logs WHERE user_id=? AND session_id=?"
# A copy of log ?1's rows before ?3 (its seq) as log ?2's.
COPY_ENTRIES = (
    f"INSERT INTO ps_entries (id, message) SELECT id-?1*{SPAN}+?2*{SPAN}, message "
    f"FROM ps_entries WHERE id>=?1*{SPAN} AND id<?1*{SPAN}+?3 ORDER BY id"
)

UPSERT_MODULE = (
    "INSERT INTO ps_modules (user_id, session_id, name, document) VALUES (?,?,?,?) "
    "ON CONFLICT (user_id, session_id, name) DO UPDATE SET document=excluded.document"
)
GET_VALUE = "SELECT name, value FROM ps_state WHERE user_id=? AND session_id=? AND name=?"
# Every key of a session's state (its head row, name '', aside).
STATE_KEYS = "SELECT name, value FROM ps_state WHERE user_id=? AND session_id=? AND name>''"
# Whether a session's state holds a key (its head row, name '', aside).
ANY_STATE = "SELECT 1 FROM ps_state WHERE user_id=? AND session_id=? AND name>'' LIMIT 1"
UPSERT_STATE = (
    "INSERT INTO ps_state (user_id, session_id, name, value) VALUES (?,?,?,?) "
    "ON CONFLICT (user_id, session_id, name) DO UPDATE SET value=excluded.value"
)
# A session's row of ps_sessions and its head row (?1 user_id, ?2 session_id).
SESSION_AND_HEAD = (
    "FROM ps_sessions s LEFT JOIN ps_state h "
    "ON h.user_id=s.user_id AND h.session_id=s.session_id AND h.name='' "
)
INFO_COLUMNS = (
    "s.format, h.version, s.created_at, h.updated_at, h.expires_at, s.ttl, s.metadata, s.session_id"
)
INFO = f"SELECT {INFO_COLUMNS} {SESSION_AND_HEAD} WHERE s.user_id=?1 AND s.session_id=?2"


def _head(columns: str, joins: str = "", after: str = "") -> str:
    """``columns`` of a session's head row (``h``, ?1 user_id, ?2 session_id) and its row of
    ps_sessions (``s``), and of the tables ``joins`` adds (LEFT JOINs: a session gives a row
    even when they hold nothing), then ``after`` (an order): no row when the session is not
    held."""
    joined = f" {joins}" if joins else ""
    return (
        f"SELECT {columns} FROM ps_state h "
        f"JOIN ps_sessions s ON s.user_id=?1 AND s.session_id=?2{joined} "
        f"WHERE h.user_id=?1 AND h.session_id=?2 AND h.name=''{after}"
    )


# What a read needs to know the session is live, metadata not decoded.
_LIVENESS_COLUMNS = "s.format, h.expires_at, s.ttl"
LIVENESS = _head(_LIVENESS_COLUMNS)


# Reads made by one statement, outside a transaction (a statement reads one snapshot): each
# row leads with LIVENESS's columns, so a session plainly live is answered without BEGIN,
# a LIVENESS query of its own and COMMIT.


def _live(columns: str, joins: str = "", after: str = "") -> str:
    """LIVENESS's columns, then ``columns`` (see ``_head``)."""
    return _head(f"{_LIVENESS_COLUMNS}, {columns}", joins, after)


# A state key's value (?3), or NULL:
LIVE_VALUE = _live(
    "(SELECT v.value FROM ps_state v WHERE v.user_id=?1 AND v.session_id=?2 AND v.name=?3)"
)
# Every key of the state and its value, a row each (one row of NULLs past LIVENESS's columns
# when the state holds none):
LIVE_STATE = _live(
    "v.name, v.value", "LEFT JOIN ps_state v ON v.user_id=?1 AND v.session_id=?2 AND v.name>''"
)
# One key of a session's state, removed (a patch's deletes, a drop's).
DELETE_KEY = "DELETE FROM ps_state WHERE user_id=? AND session_id=? AND name=?"
# The state narrowed to the values holding given fields (``matching``): LIVE_STATE's rows, and
# the same in a transaction, {condition} in place.
LIVE_STATE_MATCHING = LIVE_STATE.replace("v.name>''", "v.name>'' AND {condition}")
STATE_MATCHING = (
    "SELECT v.name, v.value FROM ps_state v WHERE v.user_id=?1 AND v.session_id=?2 "
    "AND v.name>'' AND {condition}"
)
# Module documents named ({names}: ?3...), a row each (one row of NULLs past LIVENESS's
# columns when none is held), each saying whether a log lies below it, as MODULE_DOCUMENTS:
LIVE_DOCUMENTS = _live(
    "m.name, m.document, m.name IS NOT NULL AND EXISTS "
    "(SELECT 1 FROM ps_logs l WHERE l.user_id=?1 AND l.session_id=?2 AND l.log>=m.name "
    "AND l.log<m.name||'/' AND (l.log=m.name OR l.log>=m.name||'.'))",
    "LEFT JOIN ps_modules m ON m.user_id=?1 AND m.session_id=?2 AND m.name IN ({names})",
)
# A log's messages seq ?4 <= seq < ?5 (LOG_RANGE's) and its last ?4 (LOG_TAIL's, newest first),
# a row each after LIVENESS's columns (one row of NULLs past them when the log holds none):
_THE_LOG = "LEFT JOIN ps_logs l ON l.user_id=?1 AND l.session_id=?2 AND l.log=?3"
LIVE_LOG_RANGE = _live(
    "e.message",
    f"{_THE_LOG} LEFT JOIN ps_entries e ON e.id>=l.id*{SPAN}+?4 AND e.id<l.id*{SPAN}+?5",
    " ORDER BY e.id",
)
LIVE_LOG_TAIL = _live(
    "e.message", f"{_THE_LOG} LEFT JOIN ps_entries e ON {IN_LOG}", " ORDER BY e.id DESC LIMIT ?4"
)
# LOG_END's two columns after LIVENESS's (NULL when the log was never written): a length.
LIVE_LOG_END = _live(
    f"l.id, (SELECT e.id FROM ps_entries e WHERE {IN_LOG} ORDER BY e.id DESC LIMIT 1)", _THE_LOG
)
# What ``SqliteBackend.stamped`` certifies, read inside an operation's transaction: the
# connection's data_version (it moves when another connection commits) and LIVENESS's columns
# (the session must be live with no expiry and no TTL, so that time alone changes nothing),
# then a column per module document named (?3...; NULL when absent).
STAMP = _head(f"(SELECT data_version FROM pragma_data_version), {_LIVENESS_COLUMNS}{{documents}}")
STAMP_DOCUMENT = (
    ", (SELECT document FROM ps_modules WHERE user_id=?1 AND session_id=?2 AND name=?{number})"
)
DATA_VERSION = "PRAGMA data_version"
# What an increment needs, under the write lock: the head, the format and TTL of the session,
# and the value (?3 the key; NULL when the key is not set).
INCREMENT_READ = _head(
    "h.version, h.expires_at, s.format, s.ttl, k.value",
    "LEFT JOIN ps_state k ON k.user_id=?1 AND k.session_id=?2 AND k.name=?3",
)
# A write's new version, updated_at and expires_at (?3, ?4, ?5) on the head.
BUMP = (
    "UPDATE ps_state SET version=?3, updated_at=?4, expires_at=?5 "
    "WHERE user_id=?1 AND session_id=?2 AND name=''"
)
# An increment's one write: the head (?3 version, ?4 updated_at, ?5 expires_at) and the value
# (?6 key, ?7 JSON), two rows that sit side by side (the head sorts first).
INCREMENT_WRITE = (
    "INSERT INTO ps_state (user_id, session_id, name, value, version, updated_at, expires_at) "
    "VALUES (?1,?2,'','',?3,?4,?5), (?1,?2,?6,?7,NULL,NULL,NULL) "
    "ON CONFLICT (user_id, session_id, name) DO UPDATE SET value=excluded.value, "
    "version=excluded.version, updated_at=excluded.updated_at, expires_at=excluded.expires_at"
)
# An increment's value, written only if the key still holds the text this process last saw
# there (?4 the new JSON, ?5 the text seen): no row changed means another writer changed it.
SET_IF_HELD = (
    "UPDATE ps_state SET value=?4 WHERE user_id=?1 AND session_id=?2 AND name=?3 AND value=?5"
)
# A write's bump in one statement, done only if the session is live and of a format this
# version reads, every field of the type ``_live_head`` wants (?1 now, ?2 sliding TTL,
# ?3 user_id, ?4 session_id); no row changed: take the full path.
BUMP_LIVE = (
    "UPDATE ps_state SET version=version+1, updated_at=?1, expires_at=CASE WHEN ?2 THEN "
    "COALESCE(?1+(SELECT ttl FROM ps_sessions WHERE user_id=?3 AND session_id=?4), expires_at) "
    "ELSE expires_at END "
    "WHERE user_id=?3 AND session_id=?4 AND name='' AND typeof(version)='integer' "
    "AND version>=0 AND (expires_at IS NULL OR (typeof(expires_at)='real' AND expires_at>?1)) "
    "AND EXISTS (SELECT 1 FROM ps_sessions WHERE user_id=?3 AND session_id=?4 "
    f"AND typeof(format)='integer' AND format>=0 AND format<={FORMAT_VERSION} "
    "AND (ttl IS NULL OR typeof(ttl)='real'))"
)
VERSION = "SELECT version FROM ps_state WHERE user_id=? AND session_id=? AND name=''"
INSERT_HEAD = (
    "INSERT OR REPLACE INTO ps_state (user_id, session_id, name, value, version, updated_at,"
    " expires_at) VALUES (?,?,'','',?,?,?)"
)
SET_EXPIRY = "UPDATE ps_state SET expires_at=? WHERE user_id=? AND session_id=? AND name=''"
# A read's slide in one statement (outside a transaction), done only if the session is live
# at ?1 with a TTL: its expiry restarts from ?1; version and updated_at stay (no change).
SLIDE_LIVE = (
    "UPDATE ps_state SET expires_at=?1+(SELECT ttl FROM ps_sessions WHERE user_id=?2 "
    "AND session_id=?3) WHERE user_id=?2 AND session_id=?3 AND name='' "
    "AND typeof(expires_at)='real' AND expires_at>?1 "
    "AND EXISTS (SELECT 1 FROM ps_sessions WHERE user_id=?2 AND session_id=?3 "
    f"AND typeof(format)='integer' AND format>=0 AND format<={FORMAT_VERSION} "
    "AND typeof(ttl)='real')"
)

#: A copy (fork, snapshot, restore): the source's rows under the target's key, inside one
#: write transaction, never read into Python. The target's head is its own, never copied.
COPY_ROWS = (  # the state without the head (the target gets its own)
    "INSERT INTO ps_state (user_id, session_id, name, value) "
    "SELECT ?, ?, name, value FROM ps_state WHERE user_id=? AND session_id=? AND name>''",
    "INSERT INTO ps_modules (user_id, session_id, name, document) "
    "SELECT ?, ?, name, document FROM ps_modules WHERE user_id=? AND session_id=?",
)
CONTENT_TABLES = ("ps_state", "ps_modules", "ps_logs")  # beside ps_sessions; entries first


def matching(fields: Fields, newest: Newest | None = None) -> tuple[str, tuple[Any, ...]] | None:
    """The condition of ``*_MATCHING`` narrowing a state to the values that hold each field
    SQL can test exactly (``json_extract``: a path of plain labels, a str, bool, 64-bit int or
    finite float), else, with ``newest``, to the ``count`` values greatest at its path (ties
    by name: a filter narrows more than an order, and each costs a parse of every value),
    with its parameters from ``?3``; None when it can narrow nothing. A value that is not an
    object, or may be sealed, always passes: the narrowing never hides what a caller must
    see (ciphertext the key guard refuses)."""
    tests: list[str] = []
    params: list[Any] = []
    for path, value in fields:
        where = _json_path(path)
        if where is None or not _comparable(value):
            continue  # left to the caller's test
        number = 3 + len(params)
        tests.append(f"json_extract(v.value,?{number})=?{number + 1}")
        params += [where, value]
    if tests:
        chosen = "(" + " AND ".join(tests) + ")"
    elif newest is not None and newest[1] >= 0 and (order := _json_path(newest[0])) is not None:
        chosen = (
            "v.name IN (SELECT w.name FROM ps_state w WHERE w.user_id=?1 AND w.session_id=?2 "
            "AND w.name>'' ORDER BY json_extract(w.value,?3) DESC, w.name LIMIT ?4)"
        )
        params += [order, newest[1]]
    else:
        return None
    condition = f"(substr(v.value,1,1)<>'{{' OR instr(v.value,'\"sealed\"')>0 OR {chosen})"
    return condition, tuple(params)


def _json_path(path: tuple[str, ...]) -> str | None:
    """``$."a"."b"`` for a path of printable ASCII labels that JSON writes as they are."""
    if not path:
        return None
    for label in path:
        if (
            type(label) is not str
            or not label
            or not label.isascii()
            or not label.isprintable()
            or '"' in label
            or "\\" in label
        ):
            return None
    return "$" + "".join(f'."{label}"' for label in path)


def _comparable(value: Any) -> bool:
    """Whether SQLite compares ``value`` as Python does (``1 == True == 1.0`` alike)."""
    kind = type(value)
    if kind is bool:
        return True
    if kind is int:
        return bool(-(2**63) <= value < 2**63)
    if kind is float:
        return math.isfinite(value)
    if kind is str:
        return utf8_encodable(value)  # a lone surrogate cannot be bound
    return False
