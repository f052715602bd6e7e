"""The backend protocol is public: named operations, one abstract set, and a wrapper that uses
nothing else (the conformance suites run on it as the ``wrapped`` backend)."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest

import praisonsession.stores as stores
from backends import make_store
from counting_store import CountingStore
from praisonsession import Session
from praisonsession.stores import InMemorySession, SessionBase, StoreBackend

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
    "increment_record_value",
    "write_modules",
    "read_modules",
    "append_log",
    "read_log",
}
OPTIONAL = {"count_log", "list_record_owners", "copy_record", "read_record_contents"}


def test_the_protocol_is_exported_and_every_store_is_one() -> None:
    for name in ("StoreBackend", "Key", "LogWrite", "StoredModules", "SessionContents", "UNSET"):
        assert name in stores.__all__
    assert issubclass(SessionBase, StoreBackend)
    assert StoreBackend.__abstractmethods__ == frozenset(REQUIRED)
    for name in REQUIRED | OPTIONAL:
        operation = getattr(StoreBackend, name)
        assert inspect.iscoroutinefunction(operation), name
        assert operation.__doc__, f"{name} says what it guarantees"
        assert not hasattr(SessionBase, "_" + name.split("_")[0]), name  # no old name left


def test_a_backend_missing_an_operation_cannot_be_made() -> None:
    class Partial(SessionBase):
        async def read_record(self, key: Any) -> None:
            return None

    with pytest.raises(TypeError) as refused:
        Partial()
    assert "create_record" in str(refused.value)


def test_every_operation_is_documented_on_the_stores_page() -> None:
    page = (Path(__file__).parents[1] / "docs" / "pages" / "stores.md").read_text("utf-8")
    for name in REQUIRED | OPTIONAL:
        assert f"`{name}(" in page, name


def test_a_wrapper_sees_each_operation_the_template_makes(tmp_path: Path, run) -> None:
    store = make_store("wrapped", tmp_path)
    assert isinstance(store, CountingStore)
    try:
        run(store.create_session("s", "u", metadata={"a": 1}))
        run(store.patch_state("s", "u", {"n": 1}))
        assert run(store.increment("s", "u", "n")) == 2
        assert run(store.append_messages("s", "u", "log", [{"role": "user"}])) == 1
        assert run(store.message_count("s", "u", "log")) == 1
        child = run(store.fork_session("s", "u", "t"))
        assert run(store.get_state("t", "u")) == {"n": 2}
        assert child.metadata["parent"] == {"session_id": "s", "user_id": "u"}
        assert run(store.list_users()) == ["u"]
        assert store.calls == {
            "create_record": 1,
            "patch_record_state": 1,
            "increment_record_value": 1,
            "append_log": 1,
            "count_log": 1,
            "read_record": 1,  # the fork walks the source's lineage: it has no parent
            "copy_record": 1,
            "read_record_state": 1,
            "list_record_owners": 1,
        }
        assert run(store.inner.get_state("t", "u")) == {"n": 2}  # it is all in the inner store
    finally:
        run(store.close())


def test_a_wrapped_store_serves_the_sync_facade() -> None:
    store = CountingStore(InMemorySession())
    with Session("chat", store=store) as session:
        session.set_state("turns", 3)
        assert session.get_state("turns") == 3
    assert store.calls["patch_record_state"] == 1
    assert store.calls["read_record_state"] >= 1
