"""The PostgreSQL tables: their version, the migrations from older ones, and the statements the
store runs (kept apart from ``store.py``, which says when each runs).

Every table lives in one schema of the user's choice (``public`` by default); its name enters
the SQL only through ``psycopg.sql.Identifier``, once, when a store compiles its statements.
Ids and values are always parameters. Keys are ``COLLATE "C"``: sessions list in code point
order, as on every other backend, whatever the database's locale.

A session is its row of ``ps_sessions`` (metadata, TTL, and what every write moves: version,
updated_at, expires_at), its state keys (``ps_state``), module documents (``ps_modules``), each
message log's acknowledged length (``ps_logs``, a row per log) and its logs' messages
(``ps_messages``). A write locks the session's row first (an ``UPDATE`` of it), so writers of
one session take turns and never deadlock with each other.

Where the lengths live: schema 1 had ``ps_logs``; schema 2 and 3 moved them into one jsonb
value of the session's row (a turn wrote two rows, not three), which every append to any log
rewrote whole, so a write grew with the session's number of logs (a LangGraph thread gains
one a checkpoint past 16 writes: 1.7x at 1,000 logs, 5.9x at 5,000). Schema 4 is ``ps_logs``
again: an append upserts its log's row alone. Older schemas are migrated on first use.
"""

from __future__ import annotations

import math
from typing import Any

from ...._internal.json_data import utf8_encodable
from ...backend import Fields
from ...record import FORMAT_VERSION

SCHEMA_VERSION = 4
"""The row of ``ps_schema``; an older schema is migrated when a store first meets it."""

_KEY = 'text COLLATE "C" NOT NULL'
# Schema 3: every user's sessions by a prefix of their id (``list_records_by_prefix``).
BY_ID_INDEX = "CREATE INDEX ps_sessions_by_id ON {s}.ps_sessions (session_id, user_id)"
# Schema 4: each log's acknowledged length, a row of its own.
LOGS_TABLE = f"""CREATE TABLE {{s}}.ps_logs (
    user_id {_KEY}, session_id {_KEY}, log {_KEY}, length bigint NOT NULL,
    PRIMARY KEY (user_id, session_id, log))"""
# A new schema, in order; {s} is the schema, quoted.
SCHEMA = (
    "CREATE SCHEMA IF NOT EXISTS {s}",
    "CREATE TABLE IF NOT EXISTS {s}.ps_schema (version integer NOT NULL)",
    f"""CREATE TABLE {{s}}.ps_sessions (
    user_id {_KEY}, session_id {_KEY}, format integer NOT NULL,
    created_at double precision NOT NULL, updated_at double precision NOT NULL,
    expires_at double precision, ttl double precision, version bigint NOT NULL,
    metadata text NOT NULL, PRIMARY KEY (user_id, session_id))""",
    "CREATE INDEX ps_sessions_expiry ON {s}.ps_sessions (expires_at) WHERE expires_at IS NOT NULL",
    BY_ID_INDEX,
    f"""CREATE TABLE {{s}}.ps_state (
    user_id {_KEY}, session_id {_KEY}, name {_KEY}, value text NOT NULL,
    PRIMARY KEY (user_id, session_id, name))""",
    f"""CREATE TABLE {{s}}.ps_modules (
    user_id {_KEY}, session_id {_KEY}, name {_KEY}, document text NOT NULL,
    PRIMARY KEY (user_id, session_id, name))""",
    LOGS_TABLE,
    f"""CREATE TABLE {{s}}.ps_messages (
    user_id {_KEY}, session_id {_KEY}, log {_KEY}, seq bigint NOT NULL, message text NOT NULL,
    PRIMARY KEY (user_id, session_id, log, seq))""",
    # An increment whose client does not know the key's value at the session's version: lock
    # the session, and write the value the client computed (Python's arithmetic, exact for
    # every int and float) only if the key still holds what it computed from; else answer
    # what it holds, with the session's version and creation time, to compute again. A
    # session that is not live as it is answers is_live=false: the client takes the full path.
    """CREATE OR REPLACE FUNCTION {s}.ps_increment(
    p_user text, p_session text, p_name text, p_known boolean, p_old text, p_new text,
    p_now double precision, p_sliding boolean, p_format integer)
RETURNS TABLE (is_live boolean, applied boolean, held text, at_version bigint,
    created double precision) LANGUAGE plpgsql AS $$
DECLARE
    v_format integer; v_expires double precision; v_value text; v_version bigint;
    v_created double precision;
BEGIN
    SELECT s.format, s.expires_at, s.version, s.created_at
        INTO v_format, v_expires, v_version, v_created FROM {s}.ps_sessions s
        WHERE s.user_id = p_user AND s.session_id = p_session FOR UPDATE;
    IF NOT FOUND OR v_format > p_format OR v_format < 0
            OR (v_expires IS NOT NULL AND v_expires <= p_now) THEN
        RETURN QUERY SELECT false, false, NULL::text, NULL::bigint, NULL::double precision;
        RETURN;
    END IF;
    SELECT v.value INTO v_value FROM {s}.ps_state v
        WHERE v.user_id = p_user AND v.session_id = p_session AND v.name = p_name;
    IF NOT p_known OR v_value IS DISTINCT FROM p_old THEN
        RETURN QUERY SELECT true, false, v_value, v_version, v_created;
        RETURN;
    END IF;
    UPDATE {s}.ps_sessions s SET version = s.version + 1, updated_at = p_now,
        expires_at = CASE WHEN p_sliding AND s.ttl IS NOT NULL THEN p_now + s.ttl
                     ELSE s.expires_at END
        WHERE s.user_id = p_user AND s.session_id = p_session;
    INSERT INTO {s}.ps_state AS v (user_id, session_id, name, value)
        VALUES (p_user, p_session, p_name, p_new)
        ON CONFLICT (user_id, session_id, name) DO UPDATE SET value = EXCLUDED.value;
    RETURN QUERY SELECT true, true, p_new, v_version + 1, v_created;
END $$""",
)
# from version N to N + 1, run in one transaction
MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: (  # the lengths of ps_logs into their session's row (a length whose session is gone goes)
        "ALTER TABLE {s}.ps_sessions ADD COLUMN logs jsonb NOT NULL DEFAULT '{{}}'",
        "UPDATE {s}.ps_sessions s SET logs = l.lengths FROM (SELECT user_id, session_id, "
        "jsonb_object_agg(log, length) AS lengths FROM {s}.ps_logs "
        "GROUP BY user_id, session_id) l "
        "WHERE s.user_id = l.user_id AND s.session_id = l.session_id",
        "DROP TABLE {s}.ps_logs",
    ),
    2: (BY_ID_INDEX,),
    3: (  # the lengths of the sessions' rows into ps_logs, a row per log
        LOGS_TABLE,
        "INSERT INTO {s}.ps_logs (user_id, session_id, log, length) "
        "SELECT s.user_id, s.session_id, e.key, e.value::bigint "
        "FROM {s}.ps_sessions s, jsonb_each_text(s.logs) AS e",
        "ALTER TABLE {s}.ps_sessions DROP COLUMN logs",
    ),
}

TABLES = ("ps_sessions", "ps_state", "ps_modules", "ps_logs", "ps_messages")
# what a session holds beside its row
CONTENT = ("ps_state", "ps_modules", "ps_logs", "ps_messages")

# Everything but the schema version takes a transaction-scoped advisory lock first: creating
# and migrating tables is the one step no single statement can make safe against another
# process doing the same (two CREATE TABLE IF NOT EXISTS can both fail on the catalog).
# READ COMMITTED whatever the database's default: the version is then read once the lock is
# held, so a process that waited sees the migration another committed meanwhile (under
# REPEATABLE READ its snapshot, taken as it asked for the lock, runs the migration again).
SCHEMA_ISOLATION = "SET TRANSACTION ISOLATION LEVEL READ COMMITTED"
SCHEMA_LOCK = "SELECT pg_advisory_xact_lock(hashtext('praisonsession:' || %s))"
# ... and whether the server can narrow a state (GET_STATE_MATCHING: pg_input_is_valid, 16+).
SCHEMA_FOUND = (
    "SELECT to_regclass(format('%%I.ps_schema', %s::text)) IS NOT NULL, "
    "to_regclass(format('%%I.ps_sessions', %s::text)) IS NOT NULL, "
    "current_setting('server_version_num')::int >= 160000"
)
SERVER_DURABILITY = "SELECT current_setting('fsync'), current_setting('synchronous_commit')"
SCHEMA_VERSION_READ = "SELECT max(version) FROM {s}.ps_schema"
SCHEMA_VERSION_WRITE = (
    "DELETE FROM {s}.ps_schema",
    "INSERT INTO {s}.ps_schema (version) VALUES (%s)",
)

INFO_COLUMNS = (
    "format, version, created_at, updated_at, expires_at, ttl, metadata, session_id, user_id"
)
INFO = f"SELECT {INFO_COLUMNS} FROM {{s}}.ps_sessions WHERE user_id=%s AND session_id=%s"
INFO_LOCKED = INFO + " FOR UPDATE"
# What a read needs: the session's liveness (metadata not decoded), and its sliding TTL
# restarted in the same statement when it is live. %(now)s, %(sliding)s, %(u)s, %(s)s.
# A read acknowledges no write: the transaction of a read that slides commits without waiting
# for its WAL to be flushed (``synchronous_commit`` off for that transaction alone, set only
# when the slide happens). A write never runs these: what it reads, it reads with HELD_VALUE.
_LIVE = (
    f"format >= 0 AND format <= {FORMAT_VERSION} AND (expires_at IS NULL OR expires_at > %(now)s)"
)
_WRITABLE = _LIVE
READ_HEAD = (
    "WITH h AS (SELECT format, expires_at, ttl FROM {s}.ps_sessions "
    "WHERE user_id=%(u)s AND session_id=%(s)s), "
    "slide AS (UPDATE {s}.ps_sessions SET expires_at = %(now)s + ttl "
    f"WHERE user_id=%(u)s AND session_id=%(s)s AND %(sliding)s AND ttl IS NOT NULL AND {_LIVE} "
    "RETURNING set_config('synchronous_commit', 'off', true)) "
)
LIVE_HEAD = READ_HEAD + "SELECT h.format, h.expires_at, (SELECT count(*) FROM slide) FROM h"
# A read of several statements sees one snapshot (a save between them is all in or all out);
# a sliding TTL moved meanwhile by another writer makes it a serialization failure, retried.
SNAPSHOT = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"
GET_VALUE = (
    READ_HEAD + "SELECT h.format, h.expires_at, (SELECT value FROM {s}.ps_state "
    "WHERE user_id=%(u)s AND session_id=%(s)s AND name=%(name)s), (SELECT count(*) FROM slide) "
    "FROM h"
)
# A value of the state, read by a write that holds the session's row.
HELD_VALUE = "SELECT value FROM {s}.ps_state WHERE user_id=%s AND session_id=%s AND name=%s"
_PAIRS = (
    "(SELECT array_agg(ARRAY[name, value]) FROM {s}.ps_state "
    "WHERE user_id=%(u)s AND session_id=%(s)s"
)
GET_STATE = (
    READ_HEAD + "SELECT h.format, h.expires_at, " + _PAIRS + " AND name = ANY(%(names)s)), "
    "(SELECT count(*) FROM slide) FROM h"
)
GET_ALL_STATE = (
    READ_HEAD + "SELECT h.format, h.expires_at, " + _PAIRS + "), (SELECT count(*) FROM slide) "
    "FROM h"
)


def _opaque(row: str) -> str:
    """The test that a state row's value is one the server cannot look into, which a narrowed
    read always hands back: not valid JSON (the plain decode then names it), no object,
    perhaps sealed (the key guard refuses ciphertext), or holding a \\u escape (a NUL or a
    lone surrogate, which ``json`` cannot turn into text)."""
    return (
        f"NOT pg_input_is_valid({row}.value, 'json') OR left({row}.value, 1) <> chr(123) "
        f"OR strpos({row}.value, '\"sealed\"') > 0 OR strpos({row}.value, chr(92) || 'u') > 0"
    )


# The state narrowed (``read_record_state_matching``): GET_ALL_STATE's pairs whose value passes
# {tests} (``matching``; ``{{tests}}`` here, for the compiling). Values are read as ``json``,
# checked and read as text, not rebuilt as jsonb would be: less than half the cost here.
GET_STATE_MATCHING = (
    READ_HEAD + "SELECT h.format, h.expires_at, (SELECT array_agg(ARRAY[v.name, v.value]) "
    "FROM {s}.ps_state v WHERE v.user_id=%(u)s AND v.session_id=%(s)s AND CASE WHEN "
    + _opaque("v")
    + " THEN true ELSE {{tests}} END), (SELECT count(*) FROM slide) FROM h"
)
_LENGTH = (
    "(SELECT length FROM {s}.ps_logs WHERE user_id=%(u)s AND session_id=%(s)s AND log=%(log)s)"
)
# A negative start counts from the end: from the log's length in its row.
READ_LOG = (
    READ_HEAD + "SELECT h.format, h.expires_at, (SELECT array_agg(message ORDER BY seq) "
    "FROM {s}.ps_messages WHERE user_id=%(u)s AND session_id=%(s)s AND log=%(log)s "
    f"AND seq >= CASE WHEN %(start)s >= 0 THEN %(start)s ELSE COALESCE({_LENGTH}, 0) "
    "+ %(start)s END AND seq < %(stop)s), (SELECT count(*) FROM slide) FROM h"
)
COUNT_LOG = (
    f"SELECT {_LENGTH} FROM {{s}}.ps_sessions WHERE user_id=%(u)s AND session_id=%(s)s AND {_LIVE}"
)
# A write's bump in one statement, done only if the session is live: version, updated_at and
# a sliding expiry. No row: take the full path.
BUMP_LIVE = (
    "UPDATE {s}.ps_sessions SET version = version + 1, updated_at = %(now)s, "
    "expires_at = CASE WHEN %(sliding)s AND ttl IS NOT NULL THEN %(now)s + ttl "
    "ELSE expires_at END "
    f"WHERE user_id=%(u)s AND session_id=%(s)s AND {_WRITABLE} RETURNING version"
)


def _move_lengths(rows: str) -> str:
    """The upsert that moves the lengths of the logs in ``rows`` (user, session, log, count).

    Its rows select from the bump's CTE, so it runs once the session's row is locked (no row,
    nothing moves); ON CONFLICT updates the log row's latest version, whoever wrote it last,
    and writers of the session take turns on its row: the length returned is this write's.
    A write touches its own logs' rows only, however many logs the session holds."""
    return (
        f"INSERT INTO {{s}}.ps_logs AS g (user_id, session_id, log, length) {rows} "
        "ON CONFLICT (user_id, session_id, log) DO UPDATE SET length = g.length + "
        "EXCLUDED.length RETURNING g.log, g.length"
    )


# A save that only appends (a turn of a conversation) in one statement: bump the live session,
# move each log's length in its row, merge the module documents, and insert the messages at
# the positions the new lengths give. The first column is 0 when the session was not live as
# it is (nothing was written). Each log is named once (the client sends repeats the full way).
SAVE_APPENDING = (
    # each log's messages are a run of %(msgs)s: the log's count, after those of the logs before
    "WITH w AS (SELECT lg, cnt, k, sum(cnt) OVER (ORDER BY k) - cnt AS first "
    "FROM unnest(%(logs)s::text[], %(counts)s::bigint[]) WITH ORDINALITY AS w(lg, cnt, k)), "
    "b AS (" + BUMP_LIVE + "), "
    "moved AS (" + _move_lengths("SELECT %(u)s, %(s)s, w.lg, w.cnt FROM b, w") + "), "
    "d AS (INSERT INTO {s}.ps_modules AS o (user_id, session_id, name, document) "
    "SELECT %(u)s, %(s)s, n, doc FROM b, unnest(%(names)s::text[], %(docs)b::text[]) AS m(n, doc) "
    "ON CONFLICT (user_id, session_id, name) DO UPDATE SET document = EXCLUDED.document "
    "WHERE o.document <> EXCLUDED.document), "  # an unchanged document costs no new row
    "l AS (SELECT w.lg, w.cnt, w.first, w.k, moved.length FROM w JOIN moved ON moved.log = w.lg), "
    "m AS (INSERT INTO {s}.ps_messages (user_id, session_id, log, seq, message) "
    "SELECT %(u)s, %(s)s, l.lg, l.length - l.cnt + x.i - l.first - 1, x.msg "
    "FROM l JOIN unnest(%(msgs)b::text[]) WITH ORDINALITY AS x(msg, i) "
    "ON x.i > l.first AND x.i <= l.first + l.cnt) "
    "SELECT (SELECT count(*) FROM b), (SELECT array_agg(lg ORDER BY k) FROM l), "
    "(SELECT array_agg(length ORDER BY k) FROM l)"
)


def _bump_one_log(count: str, at_version: bool = False) -> str:
    """The CTEs ``b`` (the session bumped: version, created_at) and ``l`` (one log's length
    moved by ``count``: length) of a save to one log; with ``at_version``, only if the session
    is still at %(known)s and %(created)s."""
    bump = BUMP_LIVE.replace("RETURNING version", "RETURNING version, created_at")
    if at_version:
        bump = bump.replace(
            " RETURNING", " AND version = %(known)s AND created_at = %(created)s RETURNING"
        )
    rows = f"SELECT %(u)s, %(s)s, %(log)s, {count} FROM b"
    return f"b AS ({bump}), l AS ({_move_lengths(rows)})"


# The same save when it appends to one log (a turn of one agent), without the window that
# splits the messages among logs (0.25 ms against 0.19 ms for this form, bare). A document the
# client marks as the one it wrote last is skipped when the session is still at the version
# and creation time that write left (%(known)s, %(created)s): nobody wrote it since, so the
# stored document is that one; even unchanged, an upsert would lock and probe its row.
SAVE_ONE_LOG = (
    "WITH " + _bump_one_log("%(count)s::bigint") + ", "
    "d AS (INSERT INTO {s}.ps_modules AS o (user_id, session_id, name, document) "
    "SELECT %(u)s, %(s)s, n, doc FROM b, "
    "unnest(%(names)s::text[], %(docs)b::text[], %(mine)s::boolean[]) AS m(n, doc, mine) "
    "WHERE NOT (mine AND b.version - 1 = %(known)s AND b.created_at = %(created)s) "
    "ON CONFLICT (user_id, session_id, name) DO UPDATE SET document = EXCLUDED.document "
    "WHERE o.document <> EXCLUDED.document), "
    "m AS (INSERT INTO {s}.ps_messages (user_id, session_id, log, seq, message) "
    "SELECT %(u)s, %(s)s, %(log)s, l.length - %(count)s::bigint + x.i - 1, x.msg "
    "FROM l, unnest(%(msgs)b::text[]) WITH ORDINALITY AS x(msg, i)) "
    "SELECT l.length, b.version, b.created_at FROM b, l"
)


def _append_one_log(at_version: bool, one_message: bool) -> str:
    """``SAVE_ONE_LOG`` when no module document needs writing: none was given, or (with
    ``at_version``) every one is the document this store wrote last and the bump happens only
    if the session is still at the version that write left (no row: the client runs
    ``SAVE_ONE_LOG``). One message goes as a plain parameter: unnesting an array costs the
    server more than the rest of the turn (0.128 ms against 0.110, bare)."""
    count = "1" if one_message else "%(count)s::bigint"
    rows = (
        "SELECT %(u)s, %(s)s, %(log)s, l.length - 1, %(msg)s FROM l"
        if one_message
        else "SELECT %(u)s, %(s)s, %(log)s, l.length - %(count)s::bigint + x.i - 1, x.msg "
        "FROM l, unnest(%(msgs)b::text[]) WITH ORDINALITY AS x(msg, i)"
    )
    return (
        f"WITH {_bump_one_log(count, at_version)}, "
        f"m AS (INSERT INTO {{s}}.ps_messages (user_id, session_id, log, seq, message) {rows}) "
        "SELECT l.length, b.version, b.created_at FROM b, l"
    )


APPEND_ONE_LOG = _append_one_log(False, False)
APPEND_ONE_MESSAGE = _append_one_log(False, True)
APPEND_ONE_LOG_AT = _append_one_log(True, False)
APPEND_ONE_MESSAGE_AT = _append_one_log(True, True)

# The last argument is the newest format the client reads.
INCREMENT = (
    "SELECT is_live, applied, held, at_version, created "
    "FROM {s}.ps_increment(%s,%s,%s,%s,%s,%s,%s,%s,%s)"
)
# An increment whose client knows the key's value at the session's current version (it wrote
# it last): one plain statement. The bump happens only if the session is still at that
# version and creation time (nobody wrote it since, nor deleted and re-made it), checked on
# the row's latest version once it is locked; then the value is written. No row: ask
# ps_increment.
INCREMENT_AT_VERSION = (
    "WITH b AS (UPDATE {s}.ps_sessions SET version = version + 1, updated_at = %(now)s, "
    "expires_at = CASE WHEN %(sliding)s AND ttl IS NOT NULL THEN %(now)s + ttl "
    "ELSE expires_at END "
    "WHERE user_id=%(u)s AND session_id=%(s)s AND version = %(version)s "
    f"AND created_at = %(created)s AND {_WRITABLE} RETURNING version) "
    "INSERT INTO {s}.ps_state (user_id, session_id, name, value) "
    "SELECT %(u)s, %(s)s, %(name)s, %(new)s FROM b "
    "ON CONFLICT (user_id, session_id, name) DO UPDATE SET value = EXCLUDED.value "
    "RETURNING (SELECT version FROM b)"
)

INSERT_SESSION = (
    "INSERT INTO {s}.ps_sessions (user_id, session_id, format, created_at, updated_at, "
    "expires_at, ttl, version, metadata) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s)"
)
UPSERT_SESSION = (
    INSERT_SESSION + " ON CONFLICT (user_id, session_id) DO UPDATE SET format=EXCLUDED.format, "
    "created_at=EXCLUDED.created_at, updated_at=EXCLUDED.updated_at, "
    "expires_at=EXCLUDED.expires_at, ttl=EXCLUDED.ttl, version=EXCLUDED.version, "
    "metadata=EXCLUDED.metadata"
)
# A new session with its module documents and messages in one statement (ADK's create_session):
# nothing is written when a row of the session is there, live or not (0: the client takes the
# full path, which purges an expired one or says the session exists).
CREATE_WITH_MODULES = (
    "WITH n AS (INSERT INTO {s}.ps_sessions (user_id, session_id, format, created_at, "
    "updated_at, expires_at, ttl, version, metadata) "
    "VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s) "
    "ON CONFLICT (user_id, session_id) DO NOTHING RETURNING 1), "
    "g AS (INSERT INTO {s}.ps_logs (user_id, session_id, log, length) "
    "SELECT %s, %s, g.lg, g.n FROM n, unnest(%s::text[], %s::bigint[]) AS g(lg, n)), "
    "d AS (INSERT INTO {s}.ps_modules (user_id, session_id, name, document) "
    "SELECT %s, %s, m.n, m.d FROM n, unnest(%s::text[], %s::text[]) AS m(n, d)), "
    "m AS (INSERT INTO {s}.ps_messages (user_id, session_id, log, seq, message) "
    "SELECT %s, %s, x.lg, x.seq, x.msg FROM n, "
    "unnest(%s::text[], %s::bigint[], %s::text[]) AS x(lg, seq, msg)) "
    "SELECT count(*) FROM n"
)
UPDATE_SESSION = (
    "UPDATE {s}.ps_sessions SET version=%s, updated_at=%s, expires_at=%s, ttl=%s, metadata=%s "
    "WHERE user_id=%s AND session_id=%s"
)
UPSERT_STATE = (
    "INSERT INTO {s}.ps_state (user_id, session_id, name, value) "
    "SELECT %s, %s, n, v FROM unnest(%s::text[], %s::text[]) AS u(n, v) "
    "ON CONFLICT (user_id, session_id, name) DO UPDATE SET value = EXCLUDED.value"
)
DELETE_STATE = (
    "DELETE FROM {s}.ps_state WHERE user_id=%s AND session_id=%s AND name = ANY(%s::text[])"
)
DELETE_ALL_STATE = "DELETE FROM {s}.ps_state WHERE user_id=%s AND session_id=%s"
ANY_STATE = "SELECT 1 FROM {s}.ps_state WHERE user_id=%s AND session_id=%s LIMIT 1"
UPSERT_MODULES = (
    "INSERT INTO {s}.ps_modules (user_id, session_id, name, document) "
    "SELECT %s, %s, n, d FROM unnest(%s::text[], %s::text[]) AS m(n, d) "
    "ON CONFLICT (user_id, session_id, name) DO UPDATE SET document = EXCLUDED.document"
)
# the full path's log statements (the session's row is locked): (log, user, session) first
LOG_LENGTH = "SELECT length FROM {s}.ps_logs WHERE log=%s AND user_id=%s AND session_id=%s"
SET_LOG_LENGTH = (
    "INSERT INTO {s}.ps_logs (log, length, user_id, session_id) VALUES (%s, %s, %s, %s) "
    "ON CONFLICT (user_id, session_id, log) DO UPDATE SET length = EXCLUDED.length"
)
CLEAR_LOG = "DELETE FROM {s}.ps_messages WHERE user_id=%s AND session_id=%s AND log=%s"
TRUNCATE_LOG = (
    "DELETE FROM {s}.ps_messages WHERE user_id=%s AND session_id=%s AND log=%s AND seq >= %s "
    "RETURNING seq, message"
)
INSERT_MESSAGES = (
    "INSERT INTO {s}.ps_messages (user_id, session_id, log, seq, message) "
    "SELECT %s, %s, %s, %s::bigint + i - 1, m FROM unnest(%b::text[]) WITH ORDINALITY AS x(m, i)"
)
LOAD_MODULES = (
    "SELECT name, document FROM {s}.ps_modules WHERE user_id=%s AND session_id=%s "
    "AND name = ANY(%s::text[])"
)
# The messages of the logs named n or n.* for each document n (with n + '.' and n + '/'): one
# range of the primary key per name ([n, n/) holds n and n.*), so the read costs what it finds.
# A filter over the session's rows (log = ANY(...) OR a range) read every message it holds, and
# so does a plain join whenever the planner, without statistics yet, puts ps_messages outside;
# OFFSET 0 keeps the lateral subquery from being pulled up into such a join. One name, the
# most common read, takes its range alone (about 60 us against 105, the arrays unpacked).
LOAD_LOGS_BELOW = (
    "SELECT log, message FROM {s}.ps_messages WHERE user_id=%s AND session_id=%s "
    "AND log >= %s AND log < %s AND (log = %s OR log >= %s) ORDER BY log, seq"
)
LOAD_MODULE_LOGS = (
    "SELECT m.log, m.message FROM unnest(%s::text[], %s::text[], %s::text[]) AS p(name, lo, hi) "
    "CROSS JOIN LATERAL (SELECT log, seq, message FROM {s}.ps_messages WHERE user_id=%s "
    "AND session_id=%s AND log >= p.name AND log < p.hi AND (log = p.name OR log >= p.lo) "
    "OFFSET 0) m ORDER BY m.log, m.seq"
)
LIST = (
    f"SELECT {INFO_COLUMNS} FROM {{s}}.ps_sessions WHERE user_id=%s AND session_id > %s "
    "AND (expires_at IS NULL OR expires_at > %s) ORDER BY session_id LIMIT %s"
)
# Every user's live sessions with an id in [?, ?) after a (session_id, user_id) pair: the
# index by session id, read from the pair to the end of the prefix and no further.
LIST_BY_PREFIX = (
    f"SELECT {INFO_COLUMNS} FROM {{s}}.ps_sessions WHERE (session_id, user_id) > (%s, %s) "
    "AND session_id < %s AND user_id <> %s AND (expires_at IS NULL OR expires_at > %s) "
    "ORDER BY session_id, user_id LIMIT %s"
)
USERS = (
    "WITH RECURSIVE u AS ("
    "(SELECT user_id FROM {s}.ps_sessions ORDER BY user_id LIMIT 1) UNION ALL "
    "SELECT (SELECT user_id FROM {s}.ps_sessions WHERE user_id > u.user_id "
    "ORDER BY user_id LIMIT 1) FROM u WHERE u.user_id IS NOT NULL) "
    "SELECT user_id FROM u WHERE user_id IS NOT NULL AND EXISTS (SELECT 1 FROM {s}.ps_sessions "
    "x WHERE x.user_id = u.user_id AND (x.expires_at IS NULL OR x.expires_at > %s))"
)
# Deleting takes two statements in one transaction: the session's row first (which waits for
# any writer of it, and locks out the next), then, seen afresh, everything it holds.
DELETE_SESSION = (
    "DELETE FROM {s}.ps_sessions WHERE user_id=%s AND session_id=%s RETURNING format, expires_at"
)
# A purge takes the expired rows nobody holds, and waits for none: a writer holding one purges
# it itself (``_live_info``), and two purges, or a purge and a copy (two rows, in key order),
# never wait on each other in opposite orders, which PostgreSQL would break as a deadlock.
PURGE_SESSIONS = (
    "DELETE FROM {s}.ps_sessions WHERE (user_id, session_id) IN (SELECT user_id, session_id "
    "FROM {s}.ps_sessions WHERE expires_at <= %s FOR UPDATE SKIP LOCKED) "
    "RETURNING user_id, session_id"
)
DELETE_CONTENT = (
    "WITH k AS (SELECT * FROM unnest(%(users)s::text[], %(sessions)s::text[]) AS k(uid, sid)), "
    + ", ".join(
        f"d_{table} AS (DELETE FROM {{s}}.{table} t USING k "
        "WHERE t.user_id = k.uid AND t.session_id = k.sid)"
        for table in CONTENT
    )
    + " SELECT 1"
)
# Copies: the target's rows from the source's, in the database (?: target, then source ids).
COPY_ROWS = (
    "INSERT INTO {s}.ps_state (user_id, session_id, name, value) "
    "SELECT %s, %s, name, value FROM {s}.ps_state WHERE user_id=%s AND session_id=%s",
    "INSERT INTO {s}.ps_modules (user_id, session_id, name, document) "
    "SELECT %s, %s, name, document FROM {s}.ps_modules WHERE user_id=%s AND session_id=%s",
)
# the source's log lengths for the target, the cut log's at most its cut: (target, log, keep,
# source)
COPY_LOGS = (
    "INSERT INTO {s}.ps_logs (user_id, session_id, log, length) "
    "SELECT %s, %s, log, CASE WHEN log = %s THEN LEAST(length, %s) ELSE length END "
    "FROM {s}.ps_logs WHERE user_id=%s AND session_id=%s"
)
COPY_MESSAGES = (
    "INSERT INTO {s}.ps_messages (user_id, session_id, log, seq, message) "
    "SELECT %s, %s, log, seq, message FROM {s}.ps_messages WHERE user_id=%s AND session_id=%s "
    "AND NOT (log = %s AND seq >= %s)"
)
CONTENTS_STATE = "SELECT name, value FROM {s}.ps_state WHERE user_id=%s AND session_id=%s"
CONTENTS_MODULES = "SELECT name, document FROM {s}.ps_modules WHERE user_id=%s AND session_id=%s"
CONTENTS_LOGS = "SELECT log, length FROM {s}.ps_logs WHERE user_id=%s AND session_id=%s"


def matching(fields: Fields) -> tuple[str, dict[str, Any]] | None:
    """GET_STATE_MATCHING's {tests} for the fields SQL can test, with their parameters; None
    for none. Each compares the text at the field's path with every way Python's JSON writes
    a value equal to the one wanted (``1 == 1.0 == True``: ``1``, ``1.0``, ``true``), as this
    store writes every value: none it holds is left out (a number or bool written with the
    same text as a str wanted comes back too; the caller tests each value again)."""
    tests: list[str] = []
    params: dict[str, Any] = {}
    for path, value in fields:
        spellings = _spellings(value)
        if not spellings or not path or not all(_bindable(label) for label in path):
            continue
        number = len(tests)
        tests.append(f"(v.value::json #>> %(p{number})s::text[]) = ANY(%(v{number})s::text[])")
        params[f"p{number}"] = list(path)
        params[f"v{number}"] = spellings
    if not tests:
        return None
    return "(" + " AND ".join(tests) + ")", params


def _spellings(value: Any) -> list[str]:
    """The texts ``#>>`` gives for the JSON values equal to ``value`` as Python compares them:
    a str as it is; a number or bool as int, float and bool are written; [] for anything
    else."""
    kind = type(value)
    if kind is str:
        return [value] if _bindable(value) else []
    if kind not in (bool, int, float) or (kind is float and not math.isfinite(value)):
        return []
    found = set()
    try:
        if kind is not float or value.is_integer():
            found.add(int.__repr__(int(value)))  # as json writes an int
        as_float = float(value)
        if as_float == value:
            found.add(float.__repr__(as_float))
            if value == 0:  # -0.0 == 0.0
                found.add(float.__repr__(-as_float))
    except (OverflowError, ValueError):  # no float this large; an int too long to write
        return []
    if value in (0, 1):
        found.add("true" if value else "false")
    return sorted(found)


def _bindable(text: Any) -> bool:
    """Whether a str can be sent as text: no NUL, no lone surrogate."""
    return type(text) is str and "\x00" not in text and utf8_encodable(text)
