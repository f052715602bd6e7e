"""What only the PostgreSQL vector store has: memory that follows a PostgreSQL session store
into its database (two machines sharing it share memories), its tables and schema version,
filters that stay parameters, and a typed error when the ``vector`` extension cannot be made.

Everything else (ids, updates, history, filters, knowledge, isolation, forks, encryption,
rekey) runs on pgvector through the ``open_session`` fixture with the other vector stores.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import psycopg
import pytest

import backends
from praisonsession import Session
from praisonsession.errors import UnsupportedFormatError, VectorExtensionError
from praisonsession.recall.vectors import vector_store
from praisonsession.recall.vectors.pgvector import where_sql


def _store_url(request: pytest.FixtureRequest) -> tuple[str, str]:
    url = request.getfixturevalue("postgres_url")
    schema = f"f{uuid.uuid4().hex[:16]}"
    return f"{url}?schema={schema}", schema


def _rows(statement: str, *params: object) -> list[tuple[object, ...]]:
    with psycopg.connect(backends.POSTGRES_URL, autocommit=True) as conn:
        cursor = conn.execute(statement, params)
        return cursor.fetchall() if cursor.description else []


SHARE = textwrap.dedent(
    """
    import sys
    from praisonsession import Session
    store, data, action = sys.argv[1:4]
    session = Session("desk", "ada", store=store, settings={"data_dir": data})
    if action == "add":
        print(session.add_memory("Ada's team standup is at 9:15 in room Kepler"))
    else:
        print(session.search_memory("when is the standup", limit=1)[0]["text"])
    session.close()
    print("chromadb" in sys.modules)  # pgvector is given vectors: no Chroma function made
    """
)


@pytest.mark.slow
def test_memory_follows_a_postgres_store_and_two_machines_share_it(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    store, schema = _store_url(request)
    folders = [tmp_path / "machine-a", tmp_path / "machine-b"]
    runs = [
        subprocess.run(
            [sys.executable, "-c", SHARE, store, str(folder), action],
            capture_output=True,
            text=True,
            timeout=300,
        )
        for folder, action in zip(folders, ["add", "search"], strict=True)
    ]
    assert [run.returncode for run in runs] == [0, 0], runs[0].stderr + runs[1].stderr
    said = [run.stdout.splitlines() for run in runs]
    assert said[1][0] == "Ada's team standup is at 9:15 in room Kepler"
    assert [lines[-1] for lines in said] == ["False", "False"]  # chromadb never imported
    assert not any((folder / "chroma").exists() for folder in folders)  # no Chroma anywhere
    registered = _rows(
        f'SELECT name, tab, metadata FROM "{schema}".ps_vector_collections ORDER BY name'
    )
    memory = [row for row in registered if "_memory_" in str(row[0]) and "history" not in row[0]]
    assert len(memory) == 1 and memory[0][2]["dimension"] == 384
    texts = _rows(f'SELECT document FROM "{schema}"."{memory[0][1]}"')
    assert texts == [("Ada's team standup is at 9:15 in room Kepler",)]
    indexes = {
        row[0] for row in _rows("SELECT indexdef FROM pg_indexes WHERE schemaname = %s", schema)
    }
    assert any("USING hnsw (embedding vector_cosine_ops)" in index for index in indexes)
    assert _rows(f'SELECT version FROM "{schema}".ps_vector_schema') == [(2,)]


def test_embedded_is_still_a_choice_beside_a_postgres_store(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    store, schema = _store_url(request)
    settings = {"data_dir": str(tmp_path / "data"), "vector_store_url": "embedded"}
    session = Session("s", "ada", store=store, settings=settings)
    session.add_memory("Ada prefers tea")
    assert session.search_memory("tea", limit=1)[0]["text"] == "Ada prefers tea"
    session.close()
    assert (tmp_path / "data" / "chroma").is_dir()
    assert _rows("SELECT to_regclass(%s)", f'"{schema}".ps_vector_collections') == [(None,)]


def test_filters_are_parameters_never_sql(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    store, _ = _store_url(request)
    session = Session("s", "ada", store=store, settings={"data_dir": str(tmp_path)})
    session.add_memory("Ada's locker code is 4471", topic="codes")
    hostile = "topic') OR TRUE --"
    assert session.search_memory("locker", where={hostile: "codes"}) == []
    assert session.list_memories(where={"topic": {"$in": ["x' OR '1'='1", "codes"]}})[0][
        "text"
    ].endswith("4471")
    condition, params = where_sql({"$or": [{hostile: {"$gte": 3}}, {"a": {"$nin": ["b"]}}]})
    with psycopg.connect(backends.POSTGRES_URL) as conn:
        shown = condition.as_string(conn)
    assert hostile not in shown and "'b'" not in shown and shown.count("%s") == len(params)
    session.close()


def test_a_newer_vector_schema_is_refused(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    store, schema = _store_url(request)
    session = Session("s", "ada", store=store, settings={"data_dir": str(tmp_path)})
    session.add_memory("Ada likes maps")
    session.close()
    _rows(f'UPDATE "{schema}".ps_vector_schema SET version = 99')
    with pytest.raises(UnsupportedFormatError, match="format 99"):
        vector_store(f"{store}&connect_timeout=9").list_collections()


def test_a_missing_extension_is_a_typed_error_saying_what_to_do(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """A database where the vector extension is not created yet, opened by a user that may
    not create it (pgvector is not a trusted extension): the error names the statement to
    run and the settings to choose instead."""
    admin = request.getfixturevalue("postgres_url")
    name = f"novec{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
        conn.execute(f"CREATE ROLE {name} LOGIN")
        conn.execute(f"GRANT CREATE ON DATABASE {name} TO {name}")
    url = admin.replace("postgres@", f"{name}@", 1).rsplit("/", 1)[0] + f"/{name}?schema=app"
    session = Session("s", "ada", store=url, settings={"data_dir": str(tmp_path)})
    session.save_state({"fine": True})  # the session store itself works
    with pytest.raises(VectorExtensionError) as caught:
        session.add_memory("Ada likes maps")
    said = str(caught.value)
    assert "CREATE EXTENSION vector;" in said and "vector_store_url" in said
    assert "'embedded'" in said and repr(name) in said
    assert session.get_state("fine") is True
    session.close()


@pytest.mark.slow
def test_with_an_encryption_key_no_text_reaches_the_servers_files(tmp_path: Path) -> None:
    """Memory following an encrypted PostgreSQL store: the texts PostgreSQL keeps (its
    tables, indexes and WAL) are sealed, and still found by meaning."""
    import base64

    from postgres_server import PostgresServer

    secret = "heron-5183"
    key = base64.urlsafe_b64encode(b"e" * 32).decode()
    server = PostgresServer().start()
    try:
        settings = {"data_dir": str(tmp_path / "data"), "encryption_key": key}
        session = Session("s", "u", store=f"{server.url}?schema=app", settings=settings)
        session.add_memory(f"Ada keeps her passport number {secret} in the blue folder")
        session.add_knowledge(f"The meeting about {secret} is on Friday in room 4.")
        (hit,) = session.search_memory("where is the passport", limit=1)
        assert hit["text"].endswith(f"{secret} in the blue folder")
        assert secret in session.search_knowledge("when is the meeting", limit=1)[0]["text"]
        session.close()
        with psycopg.connect(server.url, autocommit=True) as conn:
            conn.execute("CHECKPOINT")
            tables = conn.execute("SELECT count(*) FROM app.ps_vector_collections").fetchone()
        assert tables is not None and tables[0] >= 2  # memory, its history, knowledge
        stored = b"".join(p.read_bytes() for p in server.dir.rglob("*") if p.is_file())
        assert secret.encode() not in stored and b"passport" not in stored
        assert not (tmp_path / "data" / "chroma").exists()
    finally:
        server.stop()


def test_concurrent_writes_of_one_collection_never_deadlock(
    request: pytest.FixtureRequest,
) -> None:
    """Every write of a searched table updates the same rows of its term counts (' docs',
    ' length'): writers of several rows, or of the same rows, once waited for each other
    and PostgreSQL failed one of them (a deadlock: each of these eight threads met one).
    They now take turns, and the counts stay those of the rows."""
    import random
    import threading

    store, _ = _store_url(request)
    collection = vector_store(store).get_or_create_collection("c", {"dimension": 2})
    words = ["tea", "garden", "piano", "travel", "invoice", "doctor", "ferry", "laptop"]
    shared_ids = [f"shared{n}" for n in range(6)]  # rewritten by every thread, in any order
    failures: list[BaseException] = []

    def write(seed: int) -> None:
        rng = random.Random(seed)
        mine: list[str] = []
        try:
            for n in range(25):
                roll = rng.random()
                if roll < 0.2 and mine:
                    collection.delete([mine.pop()])
                    continue
                if roll < 0.5:
                    ids = rng.sample(shared_ids, 3)
                else:
                    ids = [f"t{seed}-{n}-{k}" for k in range(rng.choice([1, 3]))]
                    mine += ids
                terms = [rng.sample(words, 3) for _ in ids]
                collection.upsert(
                    ids,
                    [" ".join(t) for t in terms],
                    [{}] * len(ids),
                    [[0.6, 0.8]] * len(ids),
                    terms,
                )
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=write, args=(seed,)) for seed in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    table = f'"{store.rsplit("schema=", 1)[1]}".{collection.tab}'
    rows = _rows(f"SELECT count(*), coalesce(sum(length(terms)), 0) FROM {table}")[0]
    counts = dict(_rows(f"SELECT term, n FROM {table}_df WHERE term LIKE ' %%'"))
    assert rows[0] > 6 and (counts[" docs"], counts[" length"]) == rows
