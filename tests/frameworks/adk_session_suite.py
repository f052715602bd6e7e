"""Google ADK's own session-service tests, run on :class:`PraisonSessionService`.

ADK's ``tests/unittests/sessions/test_session_service.py`` runs every behaviour of a session
service over ADK's in-memory, database and SQLite services. This pytest plugin puts a
``PraisonSessionService`` behind ``InMemorySessionService()`` (on ``memory://``) and behind
``SqliteSessionService(db_path)`` (on ``sqlite:///<db_path>``) before the tests are collected,
so every test of those services reaches our adapter. ADK's ``DatabaseSessionService`` is left
as it is, and its tests are left out (they run ADK's SQLAlchemy service, not ours), with the
tests that reach into a service's internals (its engine, its SQL tables, its URL parsing, its
mocks), named in :data:`INTERNALS`.

Run against a checkout of adk-python at the installed version::

    .venv-frameworks/bin/python tests/frameworks/adk_session_suite.py /path/to/adk-python

It prints pytest's summary and exits with pytest's status.
"""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

#: ADK's test file of the session-service protocol.
FILES = ["tests/unittests/sessions/test_session_service.py"]

#: Tests of one service's machinery rather than the protocol: they patch SQLAlchemy's engine,
#: write SQLite tables by hand or read a service's private attributes.
INTERNALS = [
    # SqliteSessionService's own URL handling: ``?mode=ro`` reaches its sqlite3 connection
    "test_sqlite_session_service_preserves_uri_query_parameters",
    # InMemorySessionService's private dict of sessions
    "test_append_event_when_session_is_same_ref_as_storage_session",
]

#: The services a test may make that stand for ours, and those that do not.
OURS = ("InMemorySessionService", "SqliteSessionService")
THEIRS = ("DatabaseSessionService(", "SessionServiceType.DATABASE", "VertexAiSessionService")


def _db_path(db_url: str) -> str:
    """``SqliteSessionService``'s argument (a path, or a ``sqlite[+aiosqlite]://`` URL) as a
    path."""
    for scheme in ("sqlite+aiosqlite:///", "sqlite:///"):
        if db_url.startswith(scheme):
            return db_url[len(scheme) :].split("?", 1)[0]
    return db_url


def _install() -> None:
    """ADK's in-memory and SQLite services become PraisonSessionServices taking their
    arguments."""
    import google.adk.sessions as sessions
    import google.adk.sessions.in_memory_session_service as in_memory
    import google.adk.sessions.sqlite_session_service as sqlite

    from praisonsession.integrations.adk import PraisonSessionService

    class InMemoryOnPraison(PraisonSessionService):
        def __init__(self) -> None:
            super().__init__("memory://")

    class SqliteOnPraison(PraisonSessionService):
        def __init__(self, db_path: str) -> None:
            super().__init__(f"sqlite://{_db_path(str(db_path))}")

    for module in (sessions, in_memory):
        module.InMemorySessionService = InMemoryOnPraison  # type: ignore[misc,assignment]
    for module in (sessions, sqlite):
        module.SqliteSessionService = SqliteOnPraison  # type: ignore[misc,assignment]


def pytest_configure(config: Any) -> None:
    _install()


def _ours(item: Any) -> bool:
    """Whether a test runs one of the services put on our adapter: a ``session_service``
    other than the database one, or a test that makes an in-memory or SQLite service and no
    other kind."""
    if item.originalname in INTERNALS:
        return False
    callspec = getattr(item, "callspec", None)
    if callspec is not None and "session_service" in callspec.params:
        return getattr(callspec.params["session_service"], "name", "") != "DATABASE"
    source = inspect.getsource(item.function)
    return any(f"{name}(" in source for name in OURS) and not any(name in source for name in THEIRS)


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    kept = [item for item in items if _ours(item)]
    config.hook.pytest_deselected(items=[item for item in items if item not in kept])
    items[:] = kept


def main(checkout: str) -> int:
    here = Path(__file__).resolve().parent
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(here), str(here.parents[1]), env.get("PYTHONPATH", "")]
    )
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    command += ["-o", "asyncio_mode=auto", "-o", "asyncio_default_fixture_loop_scope=function"]
    command += ["-p", "adk_session_suite", *FILES]
    return subprocess.run(command, cwd=checkout, env=env, check=False).returncode


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
