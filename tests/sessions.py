"""Sessions for memory and knowledge tests: embedded Chroma, or the real Chroma server.

Import ``open_session`` (and ``chroma_url``, which it uses) into a test module to use it.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from chroma_server import chroma_url  # noqa: F401 - a fixture open_session may request
from praisonsession import Session


@pytest.fixture(params=["embedded", "chroma-server"])
def open_session(request: pytest.FixtureRequest, tmp_path: Path):
    """Sessions sharing one SQLite store, with vectors in embedded Chroma or a Chroma server.

    The server is shared by the whole test run, so each test gets its own collections.
    """
    settings = {"data_dir": str(tmp_path / "data")}
    if request.param == "chroma-server":
        settings["vector_store_url"] = request.getfixturevalue("chroma_url")
        settings["vector_namespace"] = f"t{uuid.uuid4().hex}"

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
