"""The backend protocol is public: named operations, one abstract set, a store that holds a
backend instead of being one, and a wrapper that uses nothing else (the conformance suites run
on it as the ``wrapped`` backend)."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest

import praisonsession.stores as stores
from backends import make_store
from counting_store import CountingBackend
from praisonsession import JSONSession, Session, SqliteSession
from praisonsession.stores import Branches, InMemorySession, SessionBase, StoreBackend
from praisonsession.stores.guard import beneath

REQUIRED = {
    "create_record",
    "read_record",
    "merge_record_metadata",
    "list_records",
    "delete_record",
    "touch_record",
    "purge_records",
    "read_record_state",
    "patch_record_state",
    "write_modules",
    "read_modules",
    "read_log",
}
#: Derived from the required ones by default (a module write with no modules; a compare-and-set;
#: a read of a log, then of the modules its messages name; a read of modules, then of the
#: messages their documents name; a read of the whole state, then a delete; a patch, then
#: that; the whole state for a narrowed read).
DERIVED = {
    "append_log",
    "increment_record_value",
    "read_log_and_modules",
    "read_modules_and_log",
    "delete_record_without_state",
    "drop_record_state",
    "read_record_state_matching",
}
OPTIONAL = DERIVED | {
    "count_log",
    "list_record_owners",
    "list_records_by_prefix",
    "truncate_log",
    "copy_record",
    "read_record_contents",
    "scrub_erased_user",
    "stamped",  # with unchanged_since, a plain method: what a cache of reads may trust
}
#: What a store shows: AgentScope's calls, the atomic operations users call, and its backend.
STORE_SURFACE = {
    "save_session_state",
    "load_session_state",
    "refresh_session_state",
    "create_session",
    "get_info",
    "exists",
    "set_metadata",
    "list_sessions",
    "list_users",
    "delete_session",
    "touch",
    "expire",
    "purge_expired",
    "get_state",
    "get_value",
    "patch_state",
    "replace_state",
    "compare_and_set",
    "increment",
    "append_messages",
    "read_messages",
    "message_count",
    "clear_messages",
    "close",
    "backend",
    "session_id",
    "url",
}


def test_the_protocol_is_exported_and_a_store_holds_a_backend(tmp_path: Path) -> None:
    for name in ("StoreBackend", "Key", "LogWrite", "StoredModules", "SessionContents", "UNSET"):
        assert name in stores.__all__
    assert not issubclass(SessionBase, StoreBackend)
    assert StoreBackend.__abstractmethods__ == frozenset(REQUIRED)
    for name in REQUIRED | OPTIONAL:
        operation = getattr(StoreBackend, name)
        assert inspect.iscoroutinefunction(operation), name
        assert operation.__doc__, f"{name} says what it guarantees"
        assert not hasattr(SessionBase, name), f"{name} is the backend's, not the store's"
    store = SqliteSession(tmp_path / "s.db")
    assert isinstance(store.backend, StoreBackend)
    assert {n for n in dir(store) if not n.startswith("_")} == STORE_SURFACE


def test_every_store_shows_at_most_thirty_names(tmp_path: Path) -> None:
    """What a user sees on a store is what they call: the record operations stay on its
    backend, forks and snapshots on ``Branches``."""
    for store in (
        InMemorySession(),
        SqliteSession(tmp_path / "s.db"),
        JSONSession(tmp_path / "j"),
        make_store("encrypted", tmp_path),
    ):
        shown = {n for n in dir(store) if not n.startswith("_")}
        assert shown >= STORE_SURFACE, type(store).__name__
        assert len(shown) <= 30, (type(store).__name__, sorted(shown - STORE_SURFACE))


def test_a_store_refuses_what_is_not_a_backend() -> None:
    with pytest.raises(ValueError, match="StoreBackend"):
        SessionBase(InMemorySession())  # type: ignore[arg-type]


def test_a_backend_missing_an_operation_cannot_be_made() -> None:
    class Partial(StoreBackend):
        async def read_record(self, key: Any) -> None:
            return None

    with pytest.raises(TypeError) as refused:
        Partial()
    assert "create_record" in str(refused.value)


def test_every_operation_is_documented_on_the_stores_page() -> None:
    page = (Path(__file__).parents[1] / "docs" / "pages" / "stores.md").read_text("utf-8")
    for name in {*REQUIRED, *OPTIONAL, "unchanged_since"}:
        assert f"`{name}(" in page, name


def test_a_wrapper_sees_each_operation_the_store_makes(tmp_path: Path, run) -> None:
    store = make_store("wrapped", tmp_path)
    counting = beneath(store.backend)  # the guard stands over it
    assert isinstance(counting, CountingBackend)
    try:
        run(store.create_session("s", "u", metadata={"a": 1}))
        run(store.patch_state("s", "u", {"n": 1}))
        assert run(store.increment("s", "u", "n")) == 2
        assert run(store.append_messages("s", "u", "log", [{"role": "user"}])) == 1
        assert run(store.message_count("s", "u", "log")) == 1
        child = run(Branches(counting).fork("s", "u", "t"))
        assert run(store.get_state("t", "u")) == {"n": 2}
        assert child.metadata["parent"] == {"session_id": "s", "user_id": "u"}
        assert run(store.list_users()) == ["u"]
        assert counting.calls == {
            "create_record": 1,
            "patch_record_state": 1,
            "increment_record_value": 1,
            "append_log": 1,
            "count_log": 1,
            # without a key, no write reads its record first: the guard reads the store's mark
            # once; the fork walks the source's lineage and reads the source it copies
            "read_record": 3,
            "copy_record": 1,
            "read_record_state": 1,
            "list_record_owners": 1,
        }
        inner = SessionBase(counting.inner)
        assert run(inner.get_state("t", "u")) == {"n": 2}  # it is all in the inner backend
    finally:
        run(store.close())


def test_a_wrapped_store_serves_the_sync_facade() -> None:
    counting = CountingBackend(InMemorySession().backend)
    with Session("chat", store=SessionBase(counting)) as session:
        session.set_state("turns", 3)
        assert session.get_state("turns") == 3
    assert counting.calls["patch_record_state"] == 1
    assert counting.calls["read_record_state"] >= 1
