"""Vector collections in PostgreSQL with pgvector: the third vector store, beside embedded
Chroma and a Chroma server, for a team that runs one PostgreSQL for sessions and memory.

A :class:`PgVectorStore` answers the calls :class:`~.index.VectorIndex`, ``erase_user`` and
``rekey`` make of a Chroma client (``get_or_create_collection``, ``get_collection``,
``list_collections``, ``delete_collection``), and a :class:`PgCollection` those of a Chroma
collection (``upsert``, ``get``, ``query``, ``delete``, ``count``), with the same shapes of
answers: the layers above do not know which store they talk to (``store.py``).

One table per collection, as Chroma keeps one index per collection: a user's search walks an
HNSW index (cosine) of that user's entries only, and erasing a user drops their tables, files
and all. The tables are registered in ``ps_vector_collections`` under a digest of the
collection's name; the schema is versioned in ``ps_vector_schema`` and migrated on first use,
as the session store's is. No SQL is built from ids, texts or filters: they are parameters,
and a ``where`` becomes JSONB containment (equality, ``$in``) and typed comparisons of
``metadata -> %s``. Identifiers (the schema, a table's digest name) enter only through
``psycopg.sql.Identifier``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import struct
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..._internal.redaction import redact_text
from ...errors import (
    InvalidValueError,
    MissingDependencyError,
    StoreUnavailableError,
    VectorExtensionError,
    install_line,
)
from .fusion import K1, B, idf, share
from .terms import selective

__all__ = [
    "NotFoundError",
    "PgCollection",
    "PgVectorStore",
    "followed_store",
    "holds_collections",
    "is_postgres_url",
]

SCHEMA_VERSION = 2
"""The row of ``ps_vector_schema``; an older schema is migrated when a store first meets it."""
#: How many rows hold each term, kept by triggers of a searched collection's table in its own
#: table ``<tab>_df`` (dropped with it), in the transaction that writes the rows: BM25 needs
#: it. ' docs' counts the rows with terms, ' length' their lengths (no term holds a space).
_COUNT_TERMS = """CREATE OR REPLACE FUNCTION {s}.ps_vector_count_terms() RETURNS trigger
LANGUAGE plpgsql AS $f$
DECLARE
    df text := format('%I.%I', TG_TABLE_SCHEMA, TG_TABLE_NAME || '_df');
    counted text := 'INSERT INTO %s (term, n) SELECT u.lexeme, %s count(*) FROM %s r, '
        'unnest(r.terms) u GROUP BY u.lexeme UNION ALL SELECT '' docs'', %s count(*) FROM %s '
        'WHERE terms IS NOT NULL UNION ALL SELECT '' length'', %s coalesce(sum(length(terms)), '
        '0) FROM %s ON CONFLICT (term) DO UPDATE SET n = %s.n + EXCLUDED.n';
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        EXECUTE format(counted, df, '-', 'old_rows', '-', 'old_rows', '-', 'old_rows', df);
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') THEN
        EXECUTE format(counted, df, '', 'new_rows', '', 'new_rows', '', 'new_rows', df);
    END IF;
    RETURN NULL;
END
$f$"""
#: From version N to N + 1, run in one transaction ({s}: the schema, quoted).
MIGRATIONS: dict[int, tuple[str, ...]] = {1: (_COUNT_TERMS,)}
_SCHEMA = (
    "CREATE SCHEMA IF NOT EXISTS {s}",
    "CREATE TABLE IF NOT EXISTS {s}.ps_vector_schema (version integer NOT NULL)",
    """CREATE TABLE IF NOT EXISTS {s}.ps_vector_collections (
    name text COLLATE "C" PRIMARY KEY, tab text COLLATE "C" NOT NULL UNIQUE,
    dimension integer NOT NULL, metadata jsonb NOT NULL)""",
    _COUNT_TERMS,
)
#: HNSW build and search breadth: Chroma's own defaults (its recall is what we match).
EF_CONSTRUCTION = 100
EF_SEARCH = 100
_LOCK = "SELECT pg_advisory_xact_lock(hashtext('praisonsession vectors:' || %s))"
#: The lexical index of a searched collection: its rows' terms (``terms.py``), as lexemes of
#: the ``simple`` configuration (no stemming or stopwords of its own: the terms have them).
_TERMS_INDEX_SQL = "CREATE INDEX IF NOT EXISTS {} ON {} USING gin (terms)"
#: Rows given their terms at once when a table from before them is first searched.
_FILL = 500
_INCLUDE = ("documents", "metadatas", "embeddings")


def is_postgres_url(location: object) -> bool:
    """Whether a ``vector_store_url`` names PostgreSQL (``postgresql://`` or ``postgres://``)."""
    return isinstance(location, str) and location.lower().startswith(
        ("postgresql://", "postgres://")
    )


def followed_store(backend: Any) -> str | None:
    """The ``postgresql://`` URL of the session store's database when memory follows it (a
    PostgreSQL store, encrypted or not), else None."""
    while backend is not None:
        connection_url = getattr(backend, "connection_url", None)
        if callable(connection_url):
            url: str = connection_url()
            return url
        backend = getattr(backend, "inner", None)  # a wrapper (encryption) over a backend
    return None


def holds_collections(url: str) -> bool:
    """Whether the schema of ``url`` has vector collections, found without creating anything
    (a fork of a session that never used memory then opens no memory)."""
    import psycopg

    from ...stores.backends.postgres.url import parse_url

    conninfo, options = parse_url(url)
    schema = str(options.get("schema", "public"))
    try:
        with psycopg.connect(conninfo, autocommit=True, connect_timeout=10) as conn:
            row = conn.execute(
                "SELECT to_regclass(format('%%I.ps_vector_collections', %s::text)) IS NOT NULL",
                (schema,),
            ).fetchone()
    except psycopg.Error:
        return True  # unknown: memory opens, and says what is wrong
    return bool(row and row[0])


class NotFoundError(LookupError):
    """No collection of that name (what Chroma's own ``NotFoundError`` says, by name)."""


def _lexical_parts(conn: Any, schema: str, tab: str) -> None:
    """A searched table's lexical index: the GIN index of its terms, the table of how many
    rows hold each term, and the triggers that keep it (in the caller's transaction)."""
    from psycopg import sql

    table = sql.Identifier(schema, tab)
    conn.execute(sql.SQL(_TERMS_INDEX_SQL).format(sql.Identifier(tab + "_terms"), table))
    conn.execute(
        sql.SQL(
            'CREATE TABLE IF NOT EXISTS {} (term text COLLATE "C" PRIMARY KEY, n bigint NOT NULL)'
        ).format(sql.Identifier(schema, tab + "_df"))
    )
    function = sql.Identifier(schema, "ps_vector_count_terms")
    for event, tables in (
        ("INSERT", "NEW TABLE AS new_rows"),
        ("UPDATE", "OLD TABLE AS old_rows NEW TABLE AS new_rows"),
        ("DELETE", "OLD TABLE AS old_rows"),
    ):
        conn.execute(
            sql.SQL(
                "CREATE OR REPLACE TRIGGER {} AFTER {} ON {} REFERENCING {} "
                "FOR EACH STATEMENT EXECUTE FUNCTION {}()"
            ).format(
                sql.Identifier(f"{tab}_{event.lower()}"),
                sql.SQL(event),
                table,
                sql.SQL(tables),
                function,
            )
        )


class PgVectorStore:
    """The collections of one schema of one PostgreSQL database (``postgresql://...?schema=``).

    Connections are made on demand, one per thread at a time, and kept for reuse; the schema
    and the ``vector`` extension are made on first use (``VectorExtensionError`` if the
    extension cannot be)."""

    def __init__(self, url: str) -> None:
        from ...stores.backends.postgres.url import display_url, parse_url

        try:
            import psycopg  # noqa: F401 - the postgres extra, checked before any work
        except ImportError:
            raise MissingDependencyError(
                "Memory on PostgreSQL (pgvector) needs psycopg, which is not installed. "
                f"Install it with: {install_line('postgres')}."
            ) from None
        self.conninfo, options = parse_url(url)
        self.schema = str(options.get("schema", "public"))
        if not self.schema or len(self.schema) > 63 or "\0" in self.schema:
            raise InvalidValueError(
                f"schema must be a PostgreSQL schema name (1 to 63 characters), got "
                f"{self.schema!r}."
            )
        self.url = display_url(self.conninfo, self.schema)
        self.connect_timeout = float(options.get("connect_timeout", 10.0))
        self._idle: list[Any] = []
        self._lock = threading.Lock()
        self._ready = False
        self._search_path = ""
        self._vector_oid = 0
        self._pid = os.getpid()

    def __repr__(self) -> str:
        return f"PgVectorStore({self.url!r})"

    # -- connections ----------------------------------------------------------------------

    @contextlib.contextmanager
    def connection(self) -> Iterator[Any]:
        """A connection in autocommit, with the schema ready, for this thread until done."""
        conn = self._take()
        try:
            yield conn
        except BaseException:
            if conn.closed or conn.info.transaction_status != 0:  # not IDLE: start over
                with contextlib.suppress(Exception):
                    conn.close()
            else:
                self._give_back(conn)
            raise
        self._give_back(conn)

    def _take(self) -> Any:
        import psycopg

        if os.getpid() != self._pid:  # a forked child: the parent's connections stay its own
            self._idle, self._lock, self._pid = [], threading.Lock(), os.getpid()
        with self._lock:
            while self._idle:
                conn = self._idle.pop()
                if not conn.closed:
                    return conn
        try:
            conn = psycopg.connect(
                self.conninfo, autocommit=True, connect_timeout=max(1, round(self.connect_timeout))
            )
        except psycopg.Error as exc:
            raise StoreUnavailableError(
                f"Cannot reach PostgreSQL for memory at {self.url}: "
                f"{redact_text(str(exc).strip())}. Start it, or choose another "
                "vector_store_url (an http:// Chroma server) for memory and knowledge."
            ) from None
        if not self._ready:
            self._prepare(conn)
        self._configure(conn)
        return conn

    def _give_back(self, conn: Any) -> None:
        if conn.closed:
            return
        with self._lock:
            self._idle.append(conn)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            with contextlib.suppress(Exception):
                conn.close()

    def _configure(self, conn: Any) -> None:
        from psycopg.adapt import Dumper, Loader
        from psycopg.pq import Format

        oid = self._vector_oid

        class VectorDumper(Dumper):
            format = Format.BINARY

            def dump(self, obj: Any) -> bytes:
                return _vector_bytes(obj)

        class VectorLoader(Loader):
            format = Format.BINARY

            def load(self, data: Any) -> Any:
                return _vector_from(bytes(data))

        VectorDumper.oid = oid
        conn.adapters.register_dumper(Vector, VectorDumper)
        conn.adapters.register_loader(oid, VectorLoader)
        conn.execute(
            "SELECT set_config('search_path', %s, false), "
            "set_config('hnsw.ef_search', %s, false), "
            "set_config('hnsw.iterative_scan', 'strict_order', false)",
            (self._search_path, str(EF_SEARCH)),
        )

    def _prepare(self, conn: Any) -> None:
        """The extension, the schema at its version, and what every connection needs of
        them (the extension's schema for its type and operators, the type's oid)."""
        import psycopg

        with self._lock:
            if self._ready:
                return
            try:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            except psycopg.Error as exc:
                raise self._no_extension(exc) from None
            with conn.transaction():
                conn.execute(_LOCK, (self.schema,))
                self._migrate(conn)
            row = conn.execute(
                "SELECT n.nspname, t.oid::int FROM pg_type t "
                "JOIN pg_namespace n ON n.oid = t.typnamespace "
                "JOIN pg_extension e ON e.extnamespace = n.oid AND e.extname = 'vector' "
                "WHERE t.typname = 'vector'"
            ).fetchone()
            from psycopg import sql

            self._search_path = (
                sql.SQL(", ")
                .join([sql.Identifier(self.schema), sql.Identifier(row[0])])
                .as_string(conn)
            )
            self._vector_oid = int(row[1])
            self._ready = True

    def _no_extension(self, exc: Exception) -> VectorExtensionError:
        database = self.conninfo.rsplit("/", 1)[-1].split("?", 1)[0] or "<your database>"
        return VectorExtensionError(
            f"Memory on PostgreSQL needs the vector extension (pgvector), and {self.url} "
            f"could not create it: {redact_text(str(exc).strip().splitlines()[0])}. "
            "Install pgvector on the server and have a superuser run, in database "
            f"{database!r}: CREATE EXTENSION vector; or keep memory elsewhere with the setting "
            "vector_store_url (PRAISONSESSION_VECTOR_STORE_URL): an http:// Chroma server, or "
            "'embedded' for embedded Chroma under the data directory."
        )

    def _migrate(self, conn: Any) -> None:
        from ...errors import UnsupportedFormatError

        s = self._quoted_schema(conn)
        found = conn.execute(
            "SELECT to_regclass(format('%%I.ps_vector_schema', %s::text)) IS NOT NULL",
            (self.schema,),
        ).fetchone()[0]
        version = 0
        if found:
            version = conn.execute(f"SELECT max(version) FROM {s}.ps_vector_schema").fetchone()[0]
            version = version or 0
        if version > SCHEMA_VERSION:
            raise UnsupportedFormatError(
                f"The vector tables of schema {self.schema!r} at {self.url}",
                version,
                SCHEMA_VERSION,
            )
        if version == SCHEMA_VERSION:
            return
        steps = (
            _SCHEMA
            if version == 0
            else [step for v in range(version, SCHEMA_VERSION) for step in MIGRATIONS[v]]
        )
        for step in steps:
            conn.execute(step.format(s=s))
        conn.execute(f"DELETE FROM {s}.ps_vector_schema")
        conn.execute(f"INSERT INTO {s}.ps_vector_schema (version) VALUES (%s)", (SCHEMA_VERSION,))

    def _quoted_schema(self, conn: Any) -> str:
        from psycopg import sql

        quoted: str = sql.Identifier(self.schema).as_string(conn)
        return quoted

    def table(self, tab: str) -> Any:
        from psycopg import sql

        return sql.Identifier(self.schema, tab)

    # -- collections ----------------------------------------------------------------------

    def get_or_create_collection(
        self, name: str, metadata: dict[str, Any] | None = None, **_: Any
    ) -> PgCollection:
        """The collection ``name``, made with ``metadata`` (its embedder, dimension and
        owner) when there is none; ``configuration`` and ``embedding_function`` are Chroma's
        and are not needed here (vectors are always given, and the space is cosine)."""
        from psycopg import sql

        metadata = dict(metadata or {})
        with self.connection() as conn:
            found = self._find(conn, name)
            if found is not None:
                return found
            dimension = metadata.get("dimension")
            if not isinstance(dimension, int) or dimension <= 0:
                raise InvalidValueError(f"collection {name!r} needs its vectors' dimension.")
            tab = "psv_" + hashlib.sha256(name.encode("utf-8")).hexdigest()[:40]
            table = self.table(tab)
            with conn.transaction():
                conn.execute(_LOCK, (self.schema,))
                found = self._find(conn, name)
                if found is not None:
                    return found
                conn.execute(
                    sql.SQL(
                        'CREATE TABLE {} (id text COLLATE "C" PRIMARY KEY, '
                        "seq bigint GENERATED ALWAYS AS IDENTITY, document text, "
                        "metadata jsonb NOT NULL, embedding vector({}) NOT NULL, terms tsvector)"
                    ).format(table, sql.Literal(dimension))
                )
                if metadata.get("searched", True):
                    _lexical_parts(conn, self.schema, tab)
                    conn.execute(
                        sql.SQL(
                            "CREATE INDEX {} ON {} USING hnsw (embedding vector_cosine_ops) "
                            "WITH (m = 16, ef_construction = {})"
                        ).format(sql.Identifier(tab + "_near"), table, sql.Literal(EF_CONSTRUCTION))
                    )
                conn.execute(
                    sql.SQL("CREATE INDEX {} ON {} USING gin (metadata jsonb_path_ops)").format(
                        sql.Identifier(tab + "_meta"), table
                    )
                )
                conn.execute(
                    sql.SQL(
                        "INSERT INTO {} (name, tab, dimension, metadata) VALUES (%s, %s, %s, %s)"
                    ).format(self.table("ps_vector_collections")),
                    (name, tab, dimension, _jsonb(metadata)),
                )
        return PgCollection(self, name, tab, metadata)

    def get_collection(self, name: str, **_: Any) -> PgCollection:
        with self.connection() as conn:
            found = self._find(conn, name)
        if found is None:
            raise NotFoundError(f"Collection {name!r} does not exist.")
        return found

    def list_collections(self) -> list[PgCollection]:
        from psycopg import sql

        with self.connection() as conn:
            rows = conn.execute(
                sql.SQL("SELECT name, tab, metadata FROM {} ORDER BY name").format(
                    self.table("ps_vector_collections")
                )
            ).fetchall()
        return [PgCollection(self, name, tab, metadata) for name, tab, metadata in rows]

    def delete_collection(self, name: str) -> None:
        """Drop the collection's table: its rows, indexes and files go at once."""
        from psycopg import sql

        with self.connection() as conn, conn.transaction():
            conn.execute(_LOCK, (self.schema,))
            row = conn.execute(
                sql.SQL("DELETE FROM {} WHERE name = %s RETURNING tab").format(
                    self.table("ps_vector_collections")
                ),
                (name,),
            ).fetchone()
            if row is None:
                raise NotFoundError(f"Collection {name!r} does not exist.")
            conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(self.table(row[0])))
            conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(self.table(row[0] + "_df")))

    def _find(self, conn: Any, name: str) -> PgCollection | None:
        from psycopg import sql

        row = conn.execute(
            sql.SQL("SELECT tab, metadata FROM {} WHERE name = %s").format(
                self.table("ps_vector_collections")
            ),
            (name,),
        ).fetchone()
        return None if row is None else PgCollection(self, name, row[0], row[1])

    def scrub(self) -> list[str]:
        """After an erasure: rewrite the registry and the planner's statistics (which sample
        the dropped tables' texts) and retire the WAL, as the session store does
        (``stores/backends/postgres/scrub.py``); what could not be done."""
        from ...stores.backends.postgres.scrub import scrub_after_erasure

        return scrub_after_erasure(
            self.conninfo,
            self.connect_timeout,
            self.schema,
            ["ps_vector_collections"],
            statistics=True,
        )


class Vector:
    """A vector on its way to PostgreSQL (binary, float32): what a query or a row holds."""

    __slots__ = ("values",)

    def __init__(self, values: Any) -> None:
        self.values = values


def _vector_bytes(vector: Vector) -> bytes:
    import numpy as np

    values = np.asarray(vector.values, dtype=">f4")
    return struct.pack(">HH", values.shape[0], 0) + values.tobytes()


def _vector_from(data: bytes) -> Any:
    import numpy as np

    (dimension,) = struct.unpack_from(">H", data)
    return np.frombuffer(data, dtype=">f4", count=dimension, offset=4).astype(np.float32)


def _jsonb(value: Any) -> Any:
    from psycopg.types.json import Jsonb

    return Jsonb(value, dumps=_dumps)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


class PgCollection:
    """One collection: a table of (id, document, metadata, embedding), searched by cosine."""

    def __init__(self, store: PgVectorStore, name: str, tab: str, metadata: Any) -> None:
        self.store = store
        self.name = name
        self.tab = tab
        self.metadata: dict[str, Any] = dict(metadata or {})
        self._table = store.table(tab)

    def __repr__(self) -> str:
        return f"PgCollection({self.name!r})"

    @contextlib.contextmanager
    def _writing(self) -> Iterator[Any]:
        """A transaction that writes this collection's rows, after the writers before it.

        Every write of a searched table updates the same rows of its term counts (' docs',
        ' length') in the trigger of each statement, after that statement's own rows: two
        transactions of several statements, or on the same ids, then each held a lock the
        other waited for, and PostgreSQL broke the deadlock by failing one of them (after
        its deadlock_timeout, 1 s). Taken first, this lock orders the writers instead; they
        already took turns from their first statement's term counts to their commit."""
        with self.store.connection() as conn, conn.transaction():
            self._take_turn(conn)
            yield conn

    def _take_turn(self, conn: Any) -> None:
        """In ``conn``'s transaction, before it writes: wait for the writers before it."""
        conn.execute(_LOCK, (f"{self.store.schema}.{self.tab}",))

    def count(self) -> int:
        from psycopg import sql

        with self.store.connection() as conn:
            row = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(self._table)).fetchone()
        return int(row[0])

    def upsert(
        self,
        ids: Sequence[str],
        documents: Sequence[str | None] | None = None,
        metadatas: Sequence[dict[str, Any] | None] | None = None,
        embeddings: Any = None,
        terms: Sequence[Sequence[str]] | None = None,
    ) -> None:
        """Write the entries, replacing those with the same ids; all of them or none.
        ``terms``: each entry's lexical terms, written into the same row (else none)."""
        from psycopg import sql

        if not ids:
            return
        if embeddings is None:
            raise InvalidValueError("pgvector entries are written with their vectors.")
        count = len(ids)
        documents = list(documents) if documents is not None else [None] * count
        metadatas = list(metadatas) if metadatas is not None else [None] * count
        statement = sql.SQL(
            "INSERT INTO {} AS t (id, document, metadata, embedding, terms) "
            "VALUES (%s, %s, %s, %b, to_tsvector('simple', %s)) "
            "ON CONFLICT (id) DO UPDATE SET document = EXCLUDED.document, "
            "metadata = EXCLUDED.metadata, embedding = EXCLUDED.embedding, "
            "terms = EXCLUDED.terms"
        ).format(self._table)
        joined = [None if terms is None else " ".join(terms[n]) for n in range(count)]
        rows = [
            (ids[n], documents[n], _jsonb(metadatas[n] or {}), Vector(embeddings[n]), joined[n])
            for n in range(count)
        ]
        with self._writing() as conn, conn.cursor() as cur:
            cur.executemany(statement, rows)

    add = upsert

    def get(
        self,
        ids: Sequence[str] | None = None,
        where: dict[str, Any] | None = None,
        limit: int | None = None,
        include: Sequence[str] = ("documents", "metadatas"),
        **_: Any,
    ) -> dict[str, Any]:
        """Entries by id and/or ``where``, in the order they were first written (with
        ``limit``: the first ones found)."""
        from psycopg import sql

        conditions: list[Any] = []
        params: list[Any] = []
        if ids is not None:
            conditions.append(sql.SQL("id = ANY(%s)"))
            params.append(list(ids))
        if where:
            condition, values = where_sql(where)
            conditions.append(condition)
            params += values
        # all of them in the order they were written; a few (limit), whichever come first
        statement = sql.SQL("SELECT id, document, metadata{} FROM {}{}{}").format(
            sql.SQL(", embedding" if "embeddings" in include else ""),
            self._table,
            sql.SQL(" WHERE ") + sql.SQL(" AND ").join(conditions) if conditions else sql.SQL(""),
            sql.SQL(" LIMIT %s") if limit is not None else sql.SQL(" ORDER BY seq"),
        )
        if limit is not None:
            params.append(int(limit))
        with self.store.connection() as conn, conn.cursor(binary=True) as cur:
            rows = cur.execute(statement, params).fetchall()
        return _answer(rows, include)

    def query(
        self,
        query_embeddings: Sequence[Any],
        n_results: int = 10,
        where: dict[str, Any] | None = None,
        include: Sequence[str] = ("documents", "metadatas", "distances"),
        **_: Any,
    ) -> dict[str, Any]:
        """The ``n_results`` entries nearest each query vector (cosine distance), through the
        HNSW index; with ``where``, the index is walked until enough entries pass it."""
        from psycopg import sql

        condition, values = where_sql(where) if where else (None, [])
        statement = sql.SQL(
            "SELECT id, document, metadata{}, embedding <=> %s AS distance FROM {}{} "
            "ORDER BY embedding <=> %s LIMIT %s"
        ).format(
            sql.SQL(", embedding" if "embeddings" in include else ""),
            self._table,
            sql.SQL(" WHERE ") + condition if condition is not None else sql.SQL(""),
        )
        answers: dict[str, list[Any]] = {"ids": [], "distances": []}
        for key in _INCLUDE:
            answers[key] = []
        with self.store.connection() as conn, conn.cursor(binary=True) as cur:
            found = []
            if len(query_embeddings) == 1:
                vector = Vector(query_embeddings[0])
                found.append(
                    cur.execute(statement, [vector, *values, vector, n_results]).fetchall()
                )
            else:
                params = [
                    [Vector(query), *values, Vector(query), n_results] for query in query_embeddings
                ]
                cur.executemany(statement, params, returning=True)
                while True:
                    found.append(cur.fetchall())
                    if not cur.nextset():
                        break
        for rows in found:
            one = _answer([row[:-1] for row in rows], include)
            for key in ("ids", *_INCLUDE):
                answers[key].append(one.get(key, []))
            answers["distances"].append([float(row[-1]) for row in rows])
        return answers

    def lexical(self, terms: Sequence[str], limit: int) -> list[tuple[str, float]]:
        """The ``limit`` rows with the best Okapi BM25 for ``terms`` (k1 1.2, b 0.75, as
        SQLite's FTS5): ids and scores. How many rows hold each term comes from the
        collection's ``_df`` table; the rows are found through the GIN index by the terms
        that are not common (``terms.selective``), and scored in one statement."""
        from psycopg import sql

        with self.store.connection() as conn:
            counts = dict(
                conn.execute(
                    sql.SQL("SELECT term, n FROM {} WHERE term = ANY(%s)").format(
                        self.store.table(self.tab + "_df")
                    ),
                    ([*terms, " docs", " length"],),
                ).fetchall()
            )
            rows = int(counts.pop(" docs", 0) or 0)
            length = int(counts.pop(" length", 0) or 0)
            held = {term: int(n) for term, n in counts.items() if n and n > 0}
            if not rows or not held:
                return []
            weights = {term: idf(n, rows) for term, n in held.items()}
            finding = selective(held, rows)
            if not finding:
                return []
            found = conn.execute(
                sql.SQL(
                    "SELECT t.id, sum(w.idf * cardinality(u.positions) * (%s + 1) / "
                    "(cardinality(u.positions) + %s * (1 - %s + %s * length(t.terms) / %s))) "
                    "AS s FROM {} t CROSS JOIN LATERAL unnest(t.terms) u "
                    "JOIN unnest(%s::text[], %s::float8[]) w(term, idf) ON u.lexeme = w.term "
                    "WHERE t.terms @@ to_tsquery('simple', %s) GROUP BY t.id "
                    "ORDER BY s DESC, t.id LIMIT %s"
                ).format(self._table),
                (
                    K1,
                    K1,
                    B,
                    B,
                    max(length / rows, 1.0),
                    list(weights),
                    list(weights.values()),
                    " | ".join(finding),  # terms are letters and digits: no operator in them
                    int(limit),
                ),
            ).fetchall()
        scored = [(row[0], float(row[1])) for row in found]
        return share(scored, [idf(held.get(term, 0), rows) for term in terms])

    def clear_terms(self) -> None:
        """Forget every row's terms (``fill_terms`` makes them again)."""
        from psycopg import sql

        with self._writing() as conn:
            conn.execute(sql.SQL("UPDATE {} SET terms = NULL").format(self._table))

    def fill_terms(self, terms_of: Callable[[str, str | None, Any], list[str]]) -> None:
        """Give the table its terms column and index if it is from before them, and the rows
        that have no terms theirs (``terms_of(id, document, metadata)``)."""
        from psycopg import sql

        with self.store.connection() as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_attribute WHERE attrelid = to_regclass(%s) "
                "AND attname = 'terms' AND NOT attisdropped",
                (sql.Identifier(self.store.schema, self.tab).as_string(conn),),
            ).fetchone()
            if not row[0]:
                with conn.transaction():
                    conn.execute(
                        sql.SQL("ALTER TABLE {} ADD COLUMN IF NOT EXISTS terms tsvector").format(
                            self._table
                        )
                    )
                    _lexical_parts(conn, self.store.schema, self.tab)
            while True:
                rows = conn.execute(
                    sql.SQL(
                        "SELECT id, document, metadata FROM {} WHERE terms IS NULL LIMIT %s"
                    ).format(self._table),
                    (_FILL,),
                ).fetchall()
                if not rows:
                    return
                filled = [(" ".join(terms_of(i, text, meta)), i) for i, text, meta in rows]
                with conn.transaction(), conn.cursor() as cur:
                    self._take_turn(conn)
                    cur.executemany(
                        sql.SQL(
                            "UPDATE {} SET terms = to_tsvector('simple', %s) WHERE id = %s"
                        ).format(self._table),
                        filled,
                    )

    def delete(self, ids: Sequence[str] | None = None, where: dict[str, Any] | None = None) -> None:
        from psycopg import sql

        conditions: list[Any] = []
        params: list[Any] = []
        if ids is not None:
            if not ids:
                return
            conditions.append(sql.SQL("id = ANY(%s)"))
            params.append(list(ids))
        if where:
            condition, values = where_sql(where)
            conditions.append(condition)
            params += values
        if not conditions:
            return
        statement = sql.SQL("DELETE FROM {} WHERE ").format(self._table) + sql.SQL(" AND ").join(
            conditions
        )
        with self._writing() as conn:
            conn.execute(statement, params)


def _answer(rows: list[Any], include: Sequence[str]) -> dict[str, Any]:
    answer: dict[str, Any] = {"ids": [row[0] for row in rows]}
    if "documents" in include:
        answer["documents"] = [row[1] for row in rows]
    if "metadatas" in include:
        answer["metadatas"] = [row[2] for row in rows]
    if "embeddings" in include:
        answer["embeddings"] = [row[3] for row in rows]
    return answer


def where_sql(where: dict[str, Any]) -> tuple[Any, list[Any]]:
    """A Chroma ``where`` (as ``filters.Where.to_chroma`` and ``Vault.where`` make them) as
    an SQL condition on ``metadata`` and its parameters. A field that is missing passes no
    condition, ``$ne`` and ``$nin`` included, as in :meth:`filters.Where.matches`."""
    from psycopg import sql

    parts: list[Any] = []
    params: list[Any] = []
    for key, condition in where.items():
        if key in ("$and", "$or"):
            inner = [where_sql(part) for part in condition]
            joiner = sql.SQL(" AND " if key == "$and" else " OR ")
            parts.append(sql.SQL("(") + joiner.join(part for part, _ in inner) + sql.SQL(")"))
            for _, values in inner:
                params += values
            continue
        if not isinstance(key, str) or key.startswith("$"):
            raise InvalidValueError(f"{key!r} is not a field or $and/$or in a filter.")
        compared = condition if isinstance(condition, dict) else {"$eq": condition}
        for op, value in compared.items():
            part, values = _compare(key, op, value)
            parts.append(part)
            params += values
    if not parts:
        return sql.SQL("TRUE"), []
    return sql.SQL("(") + sql.SQL(" AND ").join(parts) + sql.SQL(")"), params


def _compare(field: str, op: str, value: Any) -> tuple[Any, list[Any]]:
    from psycopg import sql

    if op == "$eq":
        return sql.SQL("metadata @> %s"), [_jsonb({field: value})]
    if op == "$ne":
        return sql.SQL("(metadata ? %s AND NOT metadata @> %s)"), [field, _jsonb({field: value})]
    if op in ("$in", "$nin"):
        values = [_jsonb({field: item}) for item in value]
        if op == "$in":
            return sql.SQL("metadata @> ANY(%s::jsonb[])"), [values]
        return sql.SQL("(metadata ? %s AND NOT metadata @> ANY(%s::jsonb[]))"), [field, values]
    symbols = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
    if op in symbols and isinstance(value, (int, float)) and not isinstance(value, bool):
        return (
            sql.SQL("(jsonb_typeof(metadata -> %s) = 'number' AND metadata -> %s {} %s)").format(
                sql.SQL(symbols[op])
            ),
            [field, field, _jsonb(value)],
        )
    raise InvalidValueError(f"{op!r} on {field!r} with {value!r} is not a filter pgvector runs.")
