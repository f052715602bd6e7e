"""After an erasure, leave none of the erased rows' bytes in PostgreSQL's data directory.

A ``DELETE`` only marks row versions dead. Their bytes stay in the table and index files (a
plain ``VACUUM`` marks the space free but does not zero it), in the planner's statistics
(``ANALYZE`` samples values into ``pg_statistic``) and in the write-ahead log until its
segments are removed. :func:`scrub_after_erasure` rewrites the schema's tables (``VACUUM
FULL``), replaces and rewrites the statistics, then starts a new WAL segment and checkpoints so
that the server removes the old ones.

Each step that lacks a privilege, a server setting or a free moment is reported, never skipped
silently: the erasure itself has committed either way, and the caller hands the findings on.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import Any

__all__ = ["LOCK_WAIT", "scrub_after_erasure"]

#: How long a rewrite waits for its table. ``VACUUM FULL`` takes an ACCESS EXCLUSIVE lock, and
#: while it waits for one every new statement on that table queues behind it: keep it short.
LOCK_WAIT = "3s"

Notices = list[tuple[str, str, str]]  # severity, message, detail

# Another transaction's snapshot may still see the deleted rows: the rewrite must keep them.
# It is tried again after each of these pauses while only a snapshot kept rows (one that was
# ending: another client's transaction, an ANALYZE), within _PATIENCE seconds a scrub in all.
_PAUSES = (0.25, 0.5, 1.0, 2.0)
_PATIENCE = 5.0


class _Patience:
    """The pauses a scrub may still take before it tries a rewrite again."""

    def __init__(self, seconds: float) -> None:
        self.left = seconds

    def paused(self, attempt: int) -> bool:
        """The ``attempt``-th pause, taken if the scrub has time left; whether it was."""
        if attempt >= len(_PAUSES) or self.left <= 0:
            return False
        pause = min(_PAUSES[attempt], self.left)
        self.left -= pause
        time.sleep(pause)
        return True


def scrub_after_erasure(
    conninfo: str,
    connect_timeout: float,
    schema: str,
    tables: Sequence[str],
    statistics: bool = False,
) -> list[str]:
    """Rewrite ``tables`` of ``schema`` and retire the WAL; what could not be scrubbed.
    ``statistics``: rewrite the planner's statistics whatever the tables hold (tables that
    were dropped leave theirs behind as dead rows)."""
    import psycopg

    try:
        with psycopg.connect(
            conninfo, autocommit=True, connect_timeout=max(1, round(connect_timeout))
        ) as conn:
            return _scrub(conn, schema, tables, statistics)
    except psycopg.Error as exc:
        return [
            f"the tables were not rewritten ({_first_line(exc)}): their files and the WAL "
            "keep the erased rows until VACUUM FULL and two checkpoints; erase the user again."
        ]


def _scrub(conn: Any, schema: str, tables: Sequence[str], statistics: bool = False) -> list[str]:
    """The scrub on an open connection (autocommit: VACUUM runs outside transactions)."""
    notices: Notices = []

    def keep(notice: Any) -> None:  # read now: psycopg frees the notice once this returns
        severity, primary, detail = (
            notice.severity_nonlocalized,
            notice.message_primary,
            notice.message_detail,
        )
        notices.append((severity or "", primary or "", detail or ""))

    conn.add_notice_handler(keep)
    conn.execute("SELECT set_config('lock_timeout', %s, false)", (LOCK_WAIT,))
    row = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM pg_stats WHERE schemaname = %s AND tablename = ANY(%s))",
        (schema, list(tables)),
    ).fetchone()
    had_statistics = bool(row and row[0])
    left: list[str] = []
    options = "FULL, VERBOSE, ANALYZE" if had_statistics else "FULL, VERBOSE"
    patience = _Patience(_PATIENCE)
    for table in tables:
        left += _vacuum(conn, notices, schema, table, options, patience)
    if had_statistics or statistics:  # the old statistics rows are dead versions now
        left += _vacuum(conn, notices, "pg_catalog", "pg_statistic", "FULL, VERBOSE", patience)
    left += _retire_wal(conn)
    return left


def _vacuum(
    conn: Any, notices: Notices, schema: str, table: str, options: str, patience: _Patience
) -> list[str]:
    """``VACUUM (options)`` of one table, made again after growing pauses while only another
    transaction's snapshot kept rows (one that was ending); what it could not do."""
    left = _vacuum_once(conn, notices, schema, table, options)
    attempt = 0
    while left and all("cannot be removed yet" in found for found in left):
        if not patience.paused(attempt):
            break
        attempt += 1
        left = _vacuum_once(conn, notices, schema, table, options)
    return left


def _vacuum_once(conn: Any, notices: Notices, schema: str, table: str, options: str) -> list[str]:
    """``VACUUM (options)`` of one table; what it could not do, from its errors and notices."""
    from psycopg import errors, sql

    name = f"{schema}.{table}"
    notices.clear()
    try:
        conn.execute(
            sql.SQL("VACUUM ({}) {}").format(sql.SQL(options), sql.Identifier(schema, table))
        )
    except errors.LockNotAvailable:
        return [
            f"{name} was in use for longer than {LOCK_WAIT}, so it was not rewritten: its "
            "files still hold the erased rows until VACUUM FULL; erase the user again later."
        ]
    except errors.Error as exc:
        return [f"{name} was not rewritten ({_first_line(exc)}): run VACUUM FULL {name}."]
    left = []
    for severity, message, detail in notices:
        if severity == "WARNING":  # "permission denied to vacuum ..."
            left.append(
                f"{name} was not rewritten ({message}): its files keep the erased rows "
                f"until its owner or a superuser runs VACUUM FULL {name}."
            )
            continue
        dead = re.match(r"\s*(\d+)", detail)
        if "removable" in message and dead and int(dead.group(1)):
            left.append(
                f"{name}: {dead.group(1)} erased row versions cannot be removed yet (another "
                "transaction's snapshot still sees them); erase the user again once it ends."
            )
    return left


def _retire_wal(conn: Any) -> list[str]:
    """A new WAL segment, then a checkpoint: the server removes the segments before it."""
    from psycopg import errors

    settings = dict(
        conn.execute(
            "SELECT name, setting FROM pg_settings "
            "WHERE name IN ('wal_recycle', 'wal_keep_size', 'archive_mode')"
        ).fetchall()
    )
    left = []
    if settings.get("wal_recycle") == "on":
        left.append(
            "the server runs with wal_recycle=on: old WAL segments are renamed for reuse, "
            "not removed, and keep the erased rows until overwritten. Set wal_recycle = off."
        )
    if settings.get("wal_keep_size", "0") != "0":
        left.append(
            f"the server keeps wal_keep_size={settings['wal_keep_size']}MB of old WAL, which "
            "holds the erased rows until it is exceeded. Set wal_keep_size = 0."
        )
    if settings.get("archive_mode", "off") != "off":
        left.append(
            "the server archives its WAL (archive_mode): the archive holds the erased rows "
            "until your retention policy removes those segments."
        )
    row = conn.execute("SELECT count(*) FROM pg_replication_slots").fetchone()
    if row and row[0]:
        left.append(
            f"{row[0]} replication slot(s) keep old WAL segments, which hold the erased rows, "
            "until their consumers advance."
        )
    for statement, grant in (
        ("SELECT pg_switch_wal()", "superuser, or GRANT EXECUTE ON FUNCTION pg_switch_wal()"),
        ("CHECKPOINT", "superuser, or the pg_checkpoint role"),
    ):
        try:
            conn.execute(statement)
        except errors.InsufficientPrivilege:
            left.append(
                f"{statement} was refused (it needs {grant}): the current WAL segment holds "
                "the erased rows until the server recycles it."
            )
        except errors.Error as exc:
            left.append(f"{statement} failed ({_first_line(exc)}): old WAL keeps the rows.")
    return left


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
