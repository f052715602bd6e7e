"""Sessions for memory and knowledge tests on each vector store: embedded Chroma, the real
Chroma server, and PostgreSQL with pgvector (the test session's server).

Import ``open_session`` (and ``chroma_url``, which it uses) into a test module to use it.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from chroma_server import chroma_url  # noqa: F401 - a fixture open_session may request
from praisonsession import Session

#: The vector stores every memory and knowledge test runs on.
VECTOR_STORES = ["embedded", "chroma-server", "pgvector"]


def vector_settings(kind: str, request: pytest.FixtureRequest, root: Path) -> dict[str, str]:
    """Settings that put memory and knowledge in ``kind`` of vector store, apart from every
    other test's (the servers are shared by the whole test run)."""
    settings = {"data_dir": str(root / "data")}
    if kind == "chroma-server":
        settings["vector_store_url"] = request.getfixturevalue("chroma_url")
        settings["vector_namespace"] = f"t{uuid.uuid4().hex}"
    elif kind == "pgvector":
        url = request.getfixturevalue("postgres_url")
        settings["vector_store_url"] = f"{url}?schema=v{uuid.uuid4().hex[:16]}"
    return settings


@pytest.fixture(params=VECTOR_STORES)
def open_session(request: pytest.FixtureRequest, tmp_path: Path):
    """Sessions sharing one SQLite store, with vectors in embedded Chroma, a Chroma server
    or PostgreSQL (pgvector)."""
    settings = vector_settings(request.param, request, tmp_path)

    def open_(session_id: str = "s", user_id: str = "ada", **options) -> Session:
        return Session(
            session_id,
            user_id,
            store=f"sqlite://{tmp_path}/sessions.db",
            settings=settings,
            **options,
        )

    open_.settings = settings
    return open_


def staged_copies(session: Session, fork_id: str) -> list[str]:
    """The texts of the copies a fork to ``fork_id`` staged and nobody adopted, as the vector
    store holds them (``session`` opens the user's memory to look)."""
    from praisonsession._internal import runtime
    from praisonsession.recall.memory.long_term import staged_session

    recall = runtime.run(session._core._memory())
    return sorted(
        hit.text for hit in recall.long.index.get(where={"session_id": staged_session(fork_id)})
    )
