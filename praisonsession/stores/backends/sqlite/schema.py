"""The SQLite file: its tables, their version and the migrations from older ones, and the
statements the hot paths run (kept apart from ``sqlite.py``, which says when each runs).

Each session has a *head*: the row of ``ps_state`` named ``''`` (no state key can be empty)
holding what every write moves (``version``, ``updated_at``, ``expires_at``); the rest of the
session is its row of ``ps_sessions``. See ``sqlite.py`` for why.
"""

from __future__ import annotations

from ...record import FORMAT_VERSION

SCHEMA_VERSION = 3
"""``PRAGMA user_version`` of the file; an older file is migrated when first opened."""

# Schema 3 lists a prefix of session ids across users (``list_records_by_prefix``).
BY_ID_INDEX = "CREATE INDEX ps_sessions_by_id ON ps_sessions (session_id, user_id)"
EXPIRY_INDEX = "CREATE INDEX ps_state_expiry ON ps_state (expires_at) WHERE expires_at IS NOT NULL"
SESSIONS_TABLE = """CREATE TABLE {name} (
    user_id TEXT NOT NULL, session_id TEXT NOT NULL, format INTEGER NOT NULL,
    created_at REAL NOT NULL, ttl REAL, metadata TEXT NOT NULL,
    PRIMARY KEY (user_id, session_id)
) WITHOUT ROWID"""
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
    """CREATE TABLE ps_messages (
    user_id TEXT NOT NULL, session_id TEXT NOT NULL, log TEXT NOT NULL, seq INTEGER NOT NULL,
    message TEXT NOT NULL,
    PRIMARY KEY (user_id, session_id, log, seq)
) WITHOUT ROWID""",
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
MIGRATIONS = {1: MIGRATE_FROM_1, 2: (BY_ID_INDEX,)}  # from user_version N to N + 1

TABLES = ("ps_sessions", "ps_state", "ps_modules", "ps_messages")  # what one session owns

GET_VALUE = "SELECT name, value FROM ps_state WHERE user_id=? AND session_id=? AND name=?"
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
# What a read needs to know the session is live, metadata not decoded.
LIVENESS = (
    "SELECT s.format, h.expires_at, s.ttl FROM ps_state h, ps_sessions s "
    "WHERE h.user_id=?1 AND h.session_id=?2 AND h.name='' AND s.user_id=?1 AND s.session_id=?2"
)
# What an increment needs, under the write lock: the head, the format and TTL of the session,
# and the value (?3 the key; NULL when the key is not set).
INCREMENT_READ = (
    "SELECT h.version, h.expires_at, s.format, s.ttl, k.value FROM ps_state h "
    "JOIN ps_sessions s ON s.user_id=?1 AND s.session_id=?2 "
    "LEFT JOIN ps_state k ON k.user_id=?1 AND k.session_id=?2 AND k.name=?3 "
    "WHERE h.user_id=?1 AND h.session_id=?2 AND h.name=''"
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

#: A copy (fork, snapshot, restore): the source's rows under the target's key, inside one
#: write transaction, never read into Python. The target's head is its own, never copied.
COPY_ROWS = (  # the state without the head (the target gets its own)
    "INSERT INTO ps_state (user_id, session_id, name, value) "
    "SELECT ?, ?, name, value FROM ps_state WHERE user_id=? AND session_id=? AND name>''",
    "INSERT INTO ps_modules (user_id, session_id, name, document) "
    "SELECT ?, ?, name, document FROM ps_modules WHERE user_id=? AND session_id=?",
)
COPY_MESSAGES = (
    "INSERT INTO ps_messages (user_id, session_id, log, seq, message) "
    "SELECT ?, ?, log, seq, message FROM ps_messages WHERE user_id=? AND session_id=? "
    "AND NOT (log=? AND seq>=?)"
)
CONTENT_TABLES = ("ps_state", "ps_modules", "ps_messages")
