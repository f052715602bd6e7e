"""Google ADK's own session-service tests, run on :class:`PraisonSessionService`.

ADK's ``tests/unittests/sessions/test_session_service.py`` holds the behaviours every session
service owes its callers. This pytest plugin runs them on our adapter, for either layout of
that file:

- Versions up to ADK 2.13 make each service in the test file: the plugin puts a
  ``PraisonSessionService`` behind ``InMemorySessionService()`` (on ``memory://``) and behind
  ``SqliteSessionService(db_path)`` (on ``sqlite://<db_path>``) before the tests are
  collected, and leaves ADK's ``DatabaseSessionService`` as it is.
- Later versions run each contract test on every backend of a registry,
  ``tests/unittests/sessions/_conformance.py``: the plugin stands in for that registry with
  :data:`BACKENDS`, our service on each kind of store.

Only the tests that reach our service run: the tests of ADK's SQLAlchemy and Vertex services
are left out, with the tests of one service's internals named in :data:`INTERNALS`.

Run against a checkout of adk-python at the installed version::

    .venv-frameworks/bin/python tests/frameworks/adk_session_suite.py /path/to/adk-python

It prints pytest's summary and exits with pytest's status.
"""

from __future__ import annotations

import inspect
import sys
import types
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from own_suites import keep_only, main

#: ADK's test file of the session-service protocol, and the registry of backends its newer
#: versions run each contract test on (``_conformance``).
FILES = ["tests/unittests/sessions/test_session_service.py"]
REGISTRY = "tests.unittests.sessions._conformance"
#: pytest's options for ADK's suite (its own configuration sets them).
OPTIONS = ("-o", "asyncio_mode=auto", "-o", "asyncio_default_fixture_loop_scope=function")

#: Tests of one service's machinery rather than the protocol: they patch SQLAlchemy's engine,
#: write SQLite tables by hand or read a service's private attributes.
INTERNALS = [
    # SqliteSessionService's own URL handling: ``?mode=ro`` reaches its sqlite3 connection
    "test_sqlite_session_service_preserves_uri_query_parameters",
    # InMemorySessionService's private dict of sessions
    "test_append_event_when_session_is_same_ref_as_storage_session",
    # InMemorySessionService's private dicts (sessions, user_state) shared or not under its
    # light-copy flag; what a caller sees is test_adk's "the state a caller is handed"
    "test_get_user_state_copies_to_session_state_depth",
]

#: Tests of behaviour ADK changed after the installed version, each with the reason: they run,
#: marked to fail (strictly: one that passes is reported), as ADK's registry marks a backend's
#: recorded divergence.
DIVERGENCES = {
    # appended in the reverse order of their ids (in id order, both orders agree)
    "test_get_session_orders_tied_timestamps_by_id[True-SessionServiceType.SQLITE]": (
        "events of one timestamp come back in the order they were appended, as ADK 2.13's "
        "SqliteSessionService and InMemorySessionService return them; later versions of "
        "ADK's SQLite service order them by id"
    ),
}

#: The services a test may make that stand for ours, and those that do not.
OURS = (
    "InMemorySessionService(",
    "SqliteSessionService(",
    "SessionServiceType.IN_MEMORY",
    "SessionServiceType.SQLITE",
)
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
        module.InMemorySessionService = InMemoryOnPraison
    for module in (sessions, sqlite):
        module.SqliteSessionService = SqliteOnPraison


class _Backend(NamedTuple):
    """A service the contract tests run on, as ADK's registry names one."""

    name: str
    store: Callable[[Path], str]
    divergences: dict[str, str]


#: The registry ADK's newer suite reads (``tests/unittests/sessions/_conformance.py``, which
#: runs each contract test once per backend it lists): our service on each kind of store, with
#: no divergence recorded.
BACKENDS = [
    _Backend("praisonsession_memory", lambda _: "memory://", {}),
    _Backend("praisonsession_sqlite", lambda folder: f"sqlite://{folder / 'sqlite.db'}", {}),
]


@pytest.fixture(params=BACKENDS, ids=lambda backend: backend.name)
async def session_service(request: Any, tmp_path: Path) -> AsyncIterator[Any]:
    """Our service on each backend of :data:`BACKENDS`, closed after the test."""
    from praisonsession.integrations.adk import PraisonSessionService

    service = PraisonSessionService(request.param.store(tmp_path))
    try:
        yield service
    finally:
        await service.close()


def pytest_configure(config: Any) -> None:
    _install()
    registry = types.ModuleType(REGISTRY)
    registry.BACKENDS = BACKENDS  # type: ignore[attr-defined]
    registry.session_service = session_service  # type: ignore[attr-defined]
    sys.modules[REGISTRY] = registry  # ADK's suite imports its registry: it finds ours


def _ours(item: Any) -> bool:
    """Whether a test runs one of the services put on our adapter: a ``session_service`` or
    a ``service_type`` other than the database one, or a test that makes an in-memory or
    SQLite service and no other kind."""
    if item.originalname in INTERNALS:
        return False
    callspec = getattr(item, "callspec", None)
    for name in ("session_service", "service_type"):
        if callspec is not None and name in callspec.params:
            return getattr(callspec.params[name], "name", "") != "DATABASE"
    source = inspect.getsource(item.function)
    return any(name in source for name in OURS) and not any(name in source for name in THEIRS)


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    keep_only(config, items, _ours)
    for item in items:
        reason = DIVERGENCES.get(item.name)
        if reason is not None:
            item.add_marker(pytest.mark.xfail(strict=True, reason=reason))


if __name__ == "__main__":
    main("adk_session_suite", FILES, __doc__ or "", *OPTIONS)
