"""The behaviour contract, checked on each of our backends and wrappers.

Every promise a backend can keep through the public API alone is a case of the shipped suite,
``praisonsession.stores.testing.StoreConformance``: each class below runs all of it on one
kind (memory, JSON, SQLite, Redis, PostgreSQL, the counting wrapper over SQLite, encryption
over JSON; every store puts its key guard over its backend). The tests after them reach under
the API, so they are ours alone: damaged or aged stored bytes (``RawAccess``), AgentScope's
own files and keys, and one backend's internals.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest

from backends import SERVERS, RawAccess, kind_of, make_store
from praisonsession import (
    FORMAT_VERSION,
    AmbiguousLegacyDataError,
    ConflictError,
    Session,
    SessionCorruptedError,
    UnsupportedFormatError,
)
from praisonsession._internal.identifiers import DEFAULT_USER
from praisonsession.stores import SessionBase, StoreBackend, record_key
from praisonsession.stores.backends.memory import InMemoryBackend
from praisonsession.stores.testing import Planner, StoreConformance
from together import together

_memory_backends: dict[Path, InMemoryBackend] = {}
ROUNDS = 300  # removals racing a put, per backend


def _ttl_of(ttl: dict[str, Any]) -> tuple[float | None, bool]:
    return ttl.get("default_ttl"), ttl.get("sliding_ttl", True)


class OurBackend(StoreConformance):
    """The suite on one kind of ``backends.make_store``."""

    kind: ClassVar[str]

    def make_backend(self, root: Path, **ttl: Any) -> StoreBackend:
        return make_store(self.kind, root, **ttl).backend


class TestMemory(OurBackend):
    """Memory lives and dies with its backend: a store "opened later" over the same root is a
    second store over the same backend object, which is what reopening means in one process."""

    kind = "memory"

    def make_backend(self, root: Path, **ttl: Any) -> StoreBackend:
        made = _memory_backends.get(root)
        if made is None or (made.default_ttl, made.sliding_ttl) != _ttl_of(ttl):
            made = _memory_backends[root] = InMemoryBackend(**ttl)
        return made


class TestJSON(OurBackend):
    kind = "json"


class TestSqlite(OurBackend):
    kind = "sqlite"


@pytest.mark.usefixtures(SERVERS["redis"])
class TestRedis(OurBackend):
    kind = "redis"


@pytest.mark.usefixtures(SERVERS["postgres"])
class TestPostgres(OurBackend):
    kind = "postgres"


class TestWrapped(OurBackend):
    kind = "wrapped"


class TestEncrypted(OurBackend):
    kind = "encrypted"


# -- stored bytes, damaged or aged -----------------------------------------------------------------


def test_stored_text_is_valid_utf8(raw: RawAccess, run) -> None:
    run(raw.store.patch_state("s", "u", {"text": "lone \ud800 and 日本"}))
    raw.raw_bytes("s", "u").decode("utf-8")  # raises if the store wrote invalid UTF-8
    assert run(raw.store.get_value("s", "u", "text")) == "lone \ud800 and 日本"


def test_corrupt_data_raises_a_typed_error_and_is_left_in_place(raw: RawAccess, run) -> None:
    run(raw.store.patch_state("s", "u", {"a": 1}))
    raw.corrupt_state("s", "u")
    damaged = raw.raw_bytes("s", "u")
    with pytest.raises(SessionCorruptedError, match="corrupt"):
        run(raw.store.get_state("s", "u"))
    with pytest.raises(SessionCorruptedError):
        run(raw.store.get_value("s", "u", "a"))
    assert raw.raw_bytes("s", "u") == damaged


@pytest.mark.parametrize("index", [0, 1, 2])
def test_a_damaged_message_is_named_and_its_neighbours_still_read(
    raw: RawAccess, run, index: int
) -> None:
    """Messages are decoded in one parse when they are whole; a damaged one sends the read
    the slow way, which names the log (and reads around it still work)."""
    messages = [{"role": "user", "content": f"message {i}"} for i in range(3)]
    run(raw.store.append_messages("s", "u", "chat", messages))
    raw.corrupt_message("s", "u", "chat", index)
    for start, stop in ((0, None), (-3, None)):
        with pytest.raises(SessionCorruptedError, match="chat"):
            run(
                raw.store.backend.read_log(
                    record_key("s", "u"), path="chat", start=start, stop=stop
                )
            )
    others = [i for i in range(3) if i != index]
    for i in others:
        assert run(raw.store.read_messages("s", "u", "chat", i, i + 1)) == [messages[i]]


def test_a_newer_format_is_refused_with_a_clear_error(raw: RawAccess, run) -> None:
    run(raw.store.patch_state("s", "u", {"a": 1}))
    raw.set_format("s", "u", FORMAT_VERSION + 1)
    with pytest.raises(UnsupportedFormatError, match="Upgrade praisonsession"):
        run(raw.store.get_info("s", "u"))


# -- AgentScope's own data -------------------------------------------------------------------------


def test_an_agentscope_session_is_migrated_on_first_read(
    legacy_raw: RawAccess, run, tmp_path
) -> None:
    raw = legacy_raw
    raw.write_agentscope("planning-2025-08-08", {"planner": {"steps": ["plan", "act \ud800"]}})
    migrated = make_store(kind_of(raw.store), tmp_path)  # a store opened after AgentScope's
    planner = Planner()
    run(migrated.load_session_state("planning-2025-08-08", planner=planner))
    assert planner.steps == ["plan", "act \ud800"]
    assert run(migrated.get_info("planning-2025-08-08")).format == FORMAT_VERSION

    run(migrated.delete_session("planning-2025-08-08"))
    again = make_store(kind_of(raw.store), tmp_path)
    assert not run(again.exists("planning-2025-08-08"))  # imported once, never resurrected
    run(again.close())
    run(migrated.close())


#: Two (user_id, session_id) pairs that AgentScope stored under one file name or key.
AMBIGUOUS = {
    "json": [("bob", "notes"), (DEFAULT_USER, "bob_notes")],
    "redis": [("a", "b:session:c"), ("a:session:b", "c")],
}


@pytest.mark.parametrize("backend", sorted(AMBIGUOUS))
def test_agentscope_data_whose_owner_is_ambiguous_goes_to_nobody(
    backend: str, request: pytest.FixtureRequest, tmp_path, run
) -> None:
    """AgentScope's names are not injective: data that may be either pair's is refused for
    both (never handed to the first to ask), stays where it is, and imports explicitly."""
    if backend == "redis":
        request.getfixturevalue("redis_url")
    store = make_store(backend, tmp_path)
    owner, other = AMBIGUOUS[backend]
    legacy = RawAccess(store).write_agentscope(
        owner[1], {"planner": {"steps": ["bob's"]}}, owner[0]
    )
    for user_id, session_id in (other, owner):
        with pytest.raises(AmbiguousLegacyDataError, match="import_agentscope"):
            run(store.load_session_state(session_id, user_id, planner=Planner()))
        with pytest.raises(AmbiguousLegacyDataError):
            Session(session_id, user_id, store=store)
        with pytest.raises(AmbiguousLegacyDataError):
            run(store.exists(session_id, user_id))

    run(store.import_agentscope(legacy, session_id=owner[1], user_id=owner[0]))
    with pytest.raises(AmbiguousLegacyDataError):  # still nobody else's
        run(store.exists(other[1], other[0]))
    planner = Planner()
    run(store.load_session_state(owner[1], owner[0], planner=planner))
    assert planner.steps == ["bob's"]
    with pytest.raises(ConflictError):  # importing over a session that exists is refused
        run(store.import_agentscope(legacy, session_id=owner[1], user_id=owner[0]))
    run(store.close())


# -- one backend's files and rows ------------------------------------------------------------------


def test_json_store_files_stay_inside_the_store_directory(tmp_path, run) -> None:
    store = make_store("json", tmp_path)
    for session_id in ("../../escape", "/etc/passwd", "..", "."):
        for user_id in ("../up", "..", "normal"):
            run(store.patch_state(session_id, user_id, {"x": 1}))
    root = store.save_dir
    outside = [p for p in tmp_path.rglob("*") if p.is_file() and root not in p.parents]
    assert outside == []
    assert not (tmp_path / "escape").exists()


def test_a_damaged_json_file_does_not_hide_the_users_other_sessions(tmp_path, run) -> None:
    store = make_store("json", tmp_path)
    for name in ("fine", "truncated", "envelope-only"):
        run(store.patch_state(name, "u", {"a": 1}))
    raw = RawAccess(store)
    raw._doc_path("truncated", "u").write_bytes(b'{"format": 1, "session_id": "trunc')
    raw._doc_path("envelope-only", "u").write_bytes(b'{"format": 1}')
    assert [i.session_id for i in run(store.list_sessions("u"))] == ["fine"]
    for name in ("truncated", "envelope-only"):  # reading one still says it is damaged
        with pytest.raises(SessionCorruptedError):
            run(store.get_state(name, "u"))


def test_a_hand_edited_sqlite_row_is_corruption_not_a_crash(tmp_path, run) -> None:
    store = make_store("sqlite", tmp_path)
    run(store.patch_state("s", "u", {"a": 1}))
    with RawAccess(store)._db() as db:
        db.execute("UPDATE ps_state SET expires_at='x' WHERE session_id='s' AND name=''")
    with pytest.raises(SessionCorruptedError, match="expires_at"):
        run(store.get_state("s", "u"))
    run(store.close())


# -- one step where the protocol's default takes two ---------------------------------------------


def test_a_key_put_while_an_emptied_record_is_removed_is_never_lost(
    store: SessionBase, run
) -> None:
    """``delete_record_without_state`` checks for keys and removes the record in one step on
    every backend of ours (the protocol's default reads, then deletes: a key put between the
    two went with the record). Whichever of a removal and a put runs first, the put's key
    is there afterwards: in the record the removal kept, or in the one the put made anew."""
    backend, key = store.backend, record_key("s", "u")
    for i in range(ROUNDS):
        run(store.patch_state("s", "u", {"x": i}))
        run(store.patch_state("s", "u", {}, delete=["x"]))  # live, and its state empty
        together(
            lambda: run(backend.delete_record_without_state(key)),
            lambda i=i: run(store.patch_state("s", "u", {"k": i})),
        )
        assert run(store.get_state("s", "u")) == {"k": i}, f"round {i}"
        run(store.patch_state("s", "u", {}, delete=["k"]))


def test_a_key_put_while_the_last_key_is_dropped_is_never_lost(store: SessionBase, run) -> None:
    """``drop_record_state`` (a LangGraph store's delete) against a put of another key:
    whichever runs first, the put's key is there afterwards and the dropped one is not (SQLite
    drops and removes in one step; the others patch, then remove only a record left empty)."""
    backend, key = store.backend, record_key("s", "u")
    for i in range(ROUNDS):
        run(store.patch_state("s", "u", {"x": i}))
        together(
            lambda: run(backend.drop_record_state(key, names=["x"])),
            lambda i=i: run(store.patch_state("s", "u", {"k": i})),
        )
        assert run(store.get_state("s", "u")) == {"k": i}, f"round {i}"
        run(store.patch_state("s", "u", {}, delete=["k"]))
