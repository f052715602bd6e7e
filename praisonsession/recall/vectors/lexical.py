"""The lexical index beside a Chroma store: one SQLite file with an FTS5 table per collection,
ranked by FTS5's own Okapi BM25.

Embedded Chroma keeps it beside its directory (``<data_dir>/chroma-lexical.sqlite3``); a Chroma
server has no text index that ranks (its ``$contains`` only filters), so the client keeps the
same file under its data directory, named by a digest of the server's URL, and fills it from
the server's documents when it does not match them. A collection's table holds its entries'
terms (``terms.py``: words, or keyed hashes of them with a key), never their text.

Writes go in one SQLite transaction around the vector store's write: it commits after the
vectors are written and rolls back when they are not. A crash between the two leaves vectors
the file lacks; the next process to open the collection counts both, and rebuilds the table
from the vector store when they differ (``VectorIndex._lexicon``).
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from .fusion import idf, okapi, share
from .terms import selective

#: Candidates FTS5 finds, per entry a search asks for, before they are scored again.
CANDIDATES = 4
#: Terms whose counts are kept per table between writes.
_HELD_TERMS = 4096

__all__ = ["LexicalFile", "table_of"]


def table_of(collection: str) -> str:
    """The table names of a collection (a digest: collection names are ours, but not SQL)."""
    return "lx_" + hashlib.sha256(collection.encode("utf-8")).hexdigest()[:32]


class LexicalFile:
    """One SQLite file of FTS5 tables, shared by the process's collections of one store."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._conn = sqlite3.connect(
            path, timeout=30, isolation_level=None, check_same_thread=False
        )
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("PRAGMA secure_delete=ON")  # erased terms leave no bytes behind
        self._made: set[str] = set()
        # What a search reads before it matches, kept until the file changes: how many entries
        # hold each term asked for (fts5vocab counts a term's postings one by one: at 100,000
        # entries a word every entry holds costs a millisecond) and each table's totals.
        # ``PRAGMA data_version`` moves when another connection commits; this one's own
        # writes forget them in ``writing``.
        self._version: int | None = None
        self._held: dict[str, dict[str, int]] = {}
        self._sums: dict[str, tuple[int, int]] = {}

    def _table(self, collection: str) -> str:
        table = table_of(collection)
        if table not in self._made:
            self._conn.execute(
                f"CREATE TABLE IF NOT EXISTS {table}_ids "
                "(n INTEGER PRIMARY KEY, id TEXT UNIQUE, length INTEGER NOT NULL)"
            )
            self._conn.execute(  # how many entries and terms in all: BM25's average length
                f"CREATE TABLE IF NOT EXISTS {table}_sum "
                "(k INTEGER PRIMARY KEY, entries INTEGER NOT NULL, terms INTEGER NOT NULL)"
            )
            self._conn.execute(f"INSERT OR IGNORE INTO {table}_sum VALUES (0, 0, 0)")
            self._conn.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING fts5(terms, "
                "tokenize = 'unicode61 remove_diacritics 0')"
            )
            self._conn.execute(  # how many entries hold each term
                f"CREATE VIRTUAL TABLE IF NOT EXISTS {table}_v USING fts5vocab({table}, 'row')"
            )
            self._made.add(table)
        return table

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """One write transaction: committed when the block ends, rolled back if it raises."""
        with self._lock:
            self._forget()
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            finally:
                self._forget()
            self._conn.execute("COMMIT")

    def _forget(self) -> None:
        self._version = None
        self._held.clear()
        self._sums.clear()

    def _known(self, table: str, terms: list[str]) -> tuple[dict[str, int], int, int]:
        """How many entries hold each of ``terms``, the entries and their terms in all: from
        what was read since the file last changed, the rest read now (under the lock)."""
        conn = self._conn
        version = conn.execute("PRAGMA data_version").fetchone()[0]
        if version != self._version:
            self._forget()
            self._version = version
        held = self._held.setdefault(table, {})
        missing = [term for term in terms if term not in held]
        if missing:
            marks = ",".join("?" * len(missing))
            found = dict(
                conn.execute(
                    f"SELECT term, doc FROM {table}_v WHERE term IN ({marks})", missing
                ).fetchall()
            )
            for term in missing:
                held[term] = int(found.get(term, 0))
            if len(held) > _HELD_TERMS:  # questions' rare words pile up: start again
                self._held[table] = held = {term: held[term] for term in terms}
        sums = self._sums.get(table)
        if sums is None:
            row = conn.execute(f"SELECT entries, terms FROM {table}_sum WHERE k = 0").fetchone()
            sums = self._sums[table] = (int(row[0]), int(row[1]))
        return {term: held[term] for term in terms}, sums[0], sums[1]

    def replace(self, collection: str, ids: list[str], terms: list[list[str]]) -> None:
        """Write each entry's terms, replacing what the same id had (inside :meth:`writing`)."""
        table = self._table(collection)
        self.delete(collection, ids)
        conn = self._conn
        for entry, found in zip(ids, terms, strict=True):
            n = conn.execute(
                f"INSERT INTO {table}_ids (id, length) VALUES (?, ?)", (entry, len(found))
            ).lastrowid
            conn.execute(f"INSERT INTO {table} (rowid, terms) VALUES (?, ?)", (n, " ".join(found)))
        conn.execute(
            f"UPDATE {table}_sum SET entries = entries + ?, terms = terms + ? WHERE k = 0",
            (len(ids), sum(len(found) for found in terms)),
        )

    def delete(self, collection: str, ids: list[str]) -> None:
        table = self._table(collection)
        conn = self._conn
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            marks = ",".join("?" * len(part))
            rows = conn.execute(
                f"SELECT n, length FROM {table}_ids WHERE id IN ({marks})", part
            ).fetchall()
            if rows:
                numbers = [row[0] for row in rows]
                conn.execute(
                    f"UPDATE {table}_sum SET entries = entries - ?, terms = terms - ? WHERE k = 0",
                    (len(rows), sum(row[1] for row in rows)),
                )
                held = ",".join("?" * len(numbers))
                conn.execute(f"DELETE FROM {table} WHERE rowid IN ({held})", numbers)
                conn.execute(f"DELETE FROM {table}_ids WHERE n IN ({held})", numbers)

    def search(self, collection: str, terms: list[str], limit: int) -> list[tuple[str, float]]:
        """The ``limit`` entries with the best BM25 for ``terms`` (any of them): stored ids
        and scores (higher is better). FTS5 finds the candidates by the terms that are not
        common (``terms.selective``), in its own ``bm25()`` order, and they are scored again
        with every term of the question and Lucene's IDF (``fusion.idf``)."""
        if not terms:
            return []
        with self._lock:
            table = self._table(collection)
            counts, entries, length = self._known(table, terms)
            finding = selective(counts, entries)
            if not finding:
                return []
            match = " OR ".join(f'"{term}"' for term in finding)  # terms hold no quote
            rows = self._conn.execute(
                f"SELECT i.id, {table}.terms FROM {table} JOIN {table}_ids i "
                f"ON i.n = {table}.rowid WHERE {table} MATCH ? ORDER BY bm25({table}) LIMIT ?",
                (match, limit * CANDIDATES),
            ).fetchall()
        weights = {term: idf(held, entries) for term, held in counts.items() if held}
        average = length / max(entries, 1)
        scored = []
        for entry, text in rows:
            held = text.split()
            frequency = Counter(term for term in held if term in weights)
            scored.append((entry, okapi(frequency, len(held), average, weights)))
        scored.sort(key=lambda pair: -pair[1])
        return share(scored[:limit], [idf(counts.get(term, 0), entries) for term in terms])

    def count(self, collection: str) -> int:
        with self._lock:
            table = self._table(collection)
            return int(self._conn.execute(f"SELECT count(*) FROM {table}_ids").fetchone()[0])

    def forget(self, collection: str) -> None:
        """Make the collection's tables again at next use if they are gone (dropped by another
        process's erasure)."""
        with self._lock:
            self._made.discard(table_of(collection))

    def drop(self, collection: str) -> None:
        """Forget the collection's table (its terms and ids); ``vacuum`` then rewrites the file."""
        table = table_of(collection)
        with self._lock:
            self._forget()
            self._conn.execute(f"DROP TABLE IF EXISTS {table}_v")
            self._conn.execute(f"DROP TABLE IF EXISTS {table}")
            self._conn.execute(f"DROP TABLE IF EXISTS {table}_ids")
            self._conn.execute(f"DROP TABLE IF EXISTS {table}_sum")
            self._made.discard(table)

    def clear(self, collection: str) -> None:
        with self._lock:
            self._forget()
            table = self._table(collection)
            self._conn.execute(f"DELETE FROM {table}")
            self._conn.execute(f"DELETE FROM {table}_ids")
            self._conn.execute(f"UPDATE {table}_sum SET entries = 0, terms = 0")

    def vacuum(self) -> None:
        """Rewrite the file without the free pages dropped tables left (after an erasure)."""
        with self._lock:
            self._conn.execute("VACUUM")
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def close(self) -> None:
        with self._lock:
            self._conn.close()
