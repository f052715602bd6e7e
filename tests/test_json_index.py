"""The JSON store's per-user index of session ids (``stores/json_index.py``): listing stays
right when the index is missing, stale after a crash, torn, or being rewritten.

The listing contract itself (order, paging, expiry) is the conformance suite's; these tests
damage the index the ways a crash or an older version of the store can, on real files.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from praisonsession._internal import runtime
from praisonsession._internal.identifiers import filename_for
from praisonsession.stores.backends.json import JSONSession
from praisonsession.stores.backends.json import index as json_index
from praisonsession.stores.reserved import erase_user_records

IDS = ["b", "a", "Zed", "é-accent", "a/b", "100", "ß", "日本", "a b", "c" * 200]


@pytest.fixture
def store(tmp_path: Path):
    made = JSONSession(tmp_path / "store")
    yield made
    runtime.run(made.close())


def user_dir(store: JSONSession, user: str = "u") -> Path:
    return store.save_dir / filename_for(user)


def listed(store: JSONSession, user: str = "u", page: int = 3) -> list[str]:
    """Every session of ``user``, paged ``page`` at a time."""
    ids: list[str] = []
    while True:
        found = runtime.run(store.list_sessions(user, limit=page, after=ids[-1] if ids else None))
        ids += [info.session_id for info in found]
        if len(found) < page:
            return ids


def create(store: JSONSession, *ids: str, user: str = "u") -> None:
    for session_id in ids:
        runtime.run(store.create_session(session_id, user))


def test_pages_follow_code_point_order_from_any_after(store: JSONSession) -> None:
    create(store, *IDS)
    assert listed(store) == sorted(IDS)
    for after in ["a", "a!", "b", "zz", "日", "\U0010ffff"]:
        page = runtime.run(store.list_sessions("u", limit=4, after=after))
        assert [i.session_id for i in page] == [s for s in sorted(IDS) if s > after][:4]


def test_a_store_written_before_the_index_lists_every_session(store: JSONSession) -> None:
    create(store, *IDS)
    runtime.run(store.delete_session("b", "u"))
    folder = user_dir(store)
    for name in (json_index.INDEX, json_index.JOURNAL, json_index.LOCK):
        (folder / name).unlink()
    expected = sorted(set(IDS) - {"b"})

    assert listed(store) == expected
    assert (folder / json_index.INDEX).read_bytes().splitlines()[1:] == [
        s.encode() for s in expected
    ]  # rebuilt from the files, then kept
    create(store, "new")
    assert listed(store) == sorted([*expected, "new"])


def test_a_name_whose_file_is_gone_and_a_torn_line_are_passed_over(store: JSONSession) -> None:
    create(store, "a", "c")
    journal = user_dir(store) / json_index.JOURNAL
    with open(journal, "ab") as file:  # a crash after the index took a name, before its file
        file.write(b"+b\n+half-writ")  # and one killed mid-line
    assert listed(store) == ["a", "c"]

    create(store, "d")  # the torn tail is dropped, not continued
    assert b"half" not in journal.read_bytes()
    assert listed(store) == ["a", "c", "d"]


def test_a_crash_between_the_two_renames_of_a_rewrite_loses_nothing(
    store: JSONSession,
) -> None:
    create(store, "a", "b")
    folder = user_dir(store)
    index = folder / json_index.INDEX
    generation = int(index.read_bytes().split(b"\n", 1)[0].rsplit(b" ", 1)[1])
    # the index of the next generation is in place; the journal is still the old one
    index.write_bytes(b"praisonsession-index 1 %d\na\nb\n" % (generation + 1))
    assert listed(store) == ["a", "b"]  # the old journal's lines are not applied twice

    create(store, "c")
    assert (
        (folder / json_index.JOURNAL)
        .read_bytes()
        .startswith(b"praisonsession-journal 1 %d\n" % (generation + 1))
    )
    assert listed(store) == ["a", "b", "c"]


def test_the_journal_is_folded_into_the_index_and_removed_ids_leave_no_trace(
    store: JSONSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(json_index, "_COMPACT_AT", 256)
    ids = [f"session-{n:03d}" for n in range(60)]
    create(store, *ids)
    for session_id in ids[::3]:
        runtime.run(store.delete_session(session_id, "u"))
    create(store, "session-000")  # deleted, then made again

    kept = sorted({s for s in ids if s not in ids[::3]} | {"session-000"})
    assert listed(store, page=7) == kept
    folder = user_dir(store)
    index = (folder / json_index.INDEX).read_bytes()
    journal = (folder / json_index.JOURNAL).read_bytes()
    assert int(index.split(b"\n", 1)[0].rsplit(b" ", 1)[1]) > 1  # rewritten along the way
    assert len(journal) < 256 + 32
    json_index.SessionIndex(folder, list, 30.0, False).compact()  # what an erasure runs
    assert listed(store, page=7) == kept
    stored = (folder / json_index.INDEX).read_bytes() + (folder / json_index.JOURNAL).read_bytes()
    for gone in ids[3::3]:
        assert gone.encode() not in stored


def test_expired_sessions_are_skipped_and_the_page_is_filled(tmp_path: Path) -> None:
    store = JSONSession(tmp_path / "store")
    try:
        create(store, "a", "d", "e", "f")
        runtime.run(store.create_session("b", "u", ttl=0.05))
        runtime.run(store.create_session("c", "u", ttl=0.05))
        time.sleep(0.1)
        page = runtime.run(store.list_sessions("u", limit=3))
        assert [i.session_id for i in page] == ["a", "d", "e"]
    finally:
        runtime.run(store.close())


def test_erasing_a_user_removes_the_users_index(store: JSONSession) -> None:
    create(store, "a", "b")
    create(store, "x", user="other")
    runtime.run(erase_user_records(store.backend, "u"))
    assert not user_dir(store).exists()
    assert listed(store) == []
    assert listed(store, "other") == ["x"]
