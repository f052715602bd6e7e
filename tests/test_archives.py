"""Portable archives: ``session.export(...)`` and ``Session.import_archive(...)``.

One versioned JSON Lines file carries a session (state, modules, every message log, metadata,
TTL), its snapshots and its long-term memories from any backend to any other. A corrupt or
newer file imports nothing; nothing half-imported is ever left behind.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import signal
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from backends import SERVERS, STORE_BACKENDS, make_store
from praisonsession import (
    AsyncSession,
    ConflictError,
    InvalidValueError,
    MessageLog,
    Session,
    SessionBase,
    SessionCorruptedError,
    StateModule,
    UnsupportedFormatError,
)
from praisonsession._internal import runtime
from praisonsession.archive import ARCHIVE_VERSION, STAGING_TTL, export_session, import_session
from praisonsession.stores import Branches, record_key
from praisonsession.stores.backend import all_records
from praisonsession.stores.record import Key
from praisonsession.stores.reserved import SNAPSHOT_OWNER, snapshot_key

#: Text every backend must carry unchanged: emoji, CJK, combining marks, right-to-left,
#: a lone surrogate (stored with escapes: see praisonsession.stores.testing), NUL and newlines.
ODD_TEXTS = [
    "emoji 🎉👩‍💻",
    "日本語のテキスト、中文",
    "e\u0301 combining, Å vs A\u030a",
    "עברית right to left",
    "lone \ud800 surrogate and \udfff low",
    'nul \x00 inside, new\nline, tab\t, quote " and back\\slash',
]


class Notebook(StateModule):
    def __init__(self) -> None:
        super().__init__()
        self.pages = MessageLog()
        self.title = "untitled"
        self.tags: list[str] = []
        self.register_state("title")
        self.register_state("tags")


def message(i: int) -> dict[str, Any]:
    return {
        "role": "user" if i % 2 == 0 else "assistant",
        "content": f"{i}: {ODD_TEXTS[i % len(ODD_TEXTS)]}",
        "meta": {"n": i, "parts": [i, i / 2, None, True]},
    }


def build(store: SessionBase, session_id: str = "s", user_id: str = "u", pages: int = 40) -> None:
    """A session with nested state, a saved StateModule, two logs, metadata, a TTL and two
    snapshots taken of different content."""
    session = Session(session_id, user_id, store=store, session_ttl=3600)
    session.save_state(
        {
            "score": 10,
            "ratio": 0.25,
            "profile": {"name": "Ada 🎉", "langs": ["日本語", "e\u0301"], "deep": {"x": [[1]]}},
            "日本語 key 🎉": ODD_TEXTS[4],
        }
    )
    runtime.run(store.set_metadata(session_id, user_id, topic="archives ✓", level=3))
    notebook = Notebook()
    notebook.title = "notes 日本"
    notebook.tags = ["a", "🎉"]
    notebook.pages.extend(message(i) for i in range(pages))
    session.save_modules(notebook=notebook)
    runtime.run(store.append_messages(session_id, user_id, "side", [message(-1)]))
    session.snapshot("all pages")
    del notebook.pages[pages // 2 :]
    notebook.title = "cut"
    session.save_modules(notebook=notebook)
    session.set_state("score", 20)
    session.snapshot()
    session.set_state("after the snapshots", True)


def content(store: SessionBase, key: Key) -> dict[str, Any]:
    """What a (session or snapshot) key holds: state, module documents, every non-empty log."""
    found = runtime.run(store.backend.read_record_contents(key))
    assert found is not None, key
    logs = {
        path: runtime.run(store.backend.read_log(key, path=path, start=0, stop=None))
        for path, count in found.logs.items()
        if count
    }
    return {"state": found.state, "modules": found.modules, "logs": logs}


def everything(store: SessionBase, session_id: str = "s", user_id: str = "u") -> dict[str, Any]:
    """A session as an archive must carry it: content, user metadata, TTL, and each snapshot
    (its description and its content)."""
    key = record_key(session_id, user_id)
    info = runtime.run(store.get_info(session_id, user_id))
    snapshots = runtime.run(Branches(store.backend).snapshots(session_id, user_id))
    return {
        **content(store, key),
        "metadata": info.metadata,
        "ttl": info.ttl,
        "snapshots": [
            (
                s.snapshot_id,
                s.label,
                s.version,
                s.messages,
                s.created_at,
                content(store, snapshot_key(key, s.snapshot_id)),
            )
            for s in snapshots
        ],
    }


def leftovers(store: SessionBase) -> list[str]:
    """Hidden sessions that are not snapshots: an export's or import's staging copies."""
    hidden = runtime.run(all_records(store.backend, SNAPSHOT_OWNER))
    return [info.session_id for info in hidden if "snapshot" not in info.metadata]


@pytest.fixture
def stores(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Callable[..., SessionBase]]:
    """A fresh store of a kind, as many as a test asks for; closed at the end."""
    opened: list[SessionBase] = []

    def open_(kind: str, **options: Any) -> SessionBase:
        if kind in SERVERS:
            request.getfixturevalue(SERVERS[kind])
        store = make_store(kind, tmp_path / f"{kind}-{len(opened)}", **options)
        opened.append(store)
        return store

    yield open_
    for store in opened:
        runtime.run(store.close())


# -- round trips ------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_round_trip_through_every_backend_gives_back_identical_content(
    stores: Callable[[str], SessionBase], tmp_path: Path
) -> None:
    """memory -> SQLite -> Redis -> JSON -> memory, exported from each into the next: a
    10,000-message log of odd text, nested state, a saved StateModule, metadata, the TTL and
    two snapshots come back exactly, at every hop (by path and by binary file alike)."""
    source = stores("memory")
    build(source, pages=10_000)
    original = everything(source)
    assert len(original["logs"]["notebook.pages"]) == 5_000
    assert [s[3] for s in original["snapshots"]] == [10_001, 5_001]

    current = source
    for hop, kind in enumerate(["sqlite", "redis", "postgres", "json", "memory"]):
        following = stores(kind)
        if hop % 2 == 0:
            path = tmp_path / f"hop-{hop}.jsonl"
            summary = Session("s", "u", store=current).export(path)
            Session.import_archive(path, store=following)
        else:
            buffer = io.BytesIO()
            summary = Session("s", "u", store=current).export(buffer)
            Session.import_archive(io.BytesIO(buffer.getvalue()), store=following)
        assert (summary.messages, summary.snapshots) == (5_001, 2), kind
        assert everything(following) == original, f"after the hop into {kind}"
        assert leftovers(current) == leftovers(following) == []
        current = following


def test_an_import_under_another_id_and_user_keeps_the_snapshots_with_it(
    stores: Callable[[str], SessionBase], tmp_path: Path
) -> None:
    store = stores("sqlite")
    build(store)
    Session("s", "u", store=store).export(tmp_path / "a.jsonl")
    copy = Session.import_archive(tmp_path / "a.jsonl", store=store, session_id="c", user_id="v")
    assert (copy.session_id, copy.user_id) == ("c", "v")
    assert everything(store, "c", "v") == everything(store)
    (full, cut) = copy.snapshots()
    copy.restore(full)
    assert len(content(store, Key("v", "c"))["logs"]["notebook.pages"]) == 40
    assert len(content(store, Key("u", "s"))["logs"]["notebook.pages"]) == 20  # untouched
    assert cut.label is None


def test_an_export_writes_one_versioned_file_that_ends_with_its_count_and_digest(
    stores: Callable[[str], SessionBase], tmp_path: Path
) -> None:
    store = stores("json")
    build(store)
    path = tmp_path / "s.jsonl"
    summary = Session("s", "u", store=store).export(path)
    lines = path.read_bytes().splitlines(keepends=True)
    assert json.loads(lines[0]) == {
        "archive": {"format": "praisonsession-archive", "version": ARCHIVE_VERSION}
    }
    assert json.loads(lines[-1]) == {
        "end": {"lines": len(lines) - 1, "sha256": hashlib.sha256(b"".join(lines[:-1])).hexdigest()}
    }
    assert summary.lines == len(lines)
    assert (summary.session_id, summary.user_id, summary.snapshots) == ("s", "u", 2)
    session_record = json.loads(lines[1])["session"]
    assert session_record["ttl"] == 3600  # the session's own metadata, not a copy's
    assert session_record["metadata"] == {"topic": "archives ✓", "level": 3}
    assert all(line.decode("utf-8") for line in lines)  # valid UTF-8, surrogates escaped
    assert sorted(p.name for p in tmp_path.iterdir()) == ["json-0", "s.jsonl"]  # no partial file


def test_an_async_session_exports_and_imports_too(
    stores: Callable[[str], SessionBase], tmp_path: Path
) -> None:
    source, target = stores("memory"), stores("sqlite")
    build(source)

    async def main() -> str:
        await AsyncSession("s", "u", store=source).export(tmp_path / "a.jsonl")
        imported = await AsyncSession.import_archive(tmp_path / "a.jsonl", target, "t")
        return imported.session_id

    assert runtime.run(main()) == "t"
    assert everything(target, "t") == everything(source)


# -- refusals ---------------------------------------------------------------------------------


def test_importing_onto_a_session_that_exists_is_refused_and_changes_nothing(
    stores: Callable[[str], SessionBase], tmp_path: Path
) -> None:
    store = stores("sqlite")
    build(store)
    Session("s", "u", store=store).export(tmp_path / "a.jsonl")
    before = everything(store)
    with pytest.raises(ConflictError, match="already exists"):
        Session.import_archive(tmp_path / "a.jsonl", store=store)
    assert everything(store) == before
    assert leftovers(store) == []


def test_an_archive_imports_again_after_its_session_was_deleted(
    stores: Callable[[str], SessionBase], tmp_path: Path
) -> None:
    """A deleted session's snapshots stay until erased; importing the session's archive
    again (a restore from backup) brings it back whole, with each snapshot once."""
    store = stores("json")
    build(store)
    original = everything(store)
    Session("s", "u", store=store).export(tmp_path / "a.jsonl")
    runtime.run(store.delete_session("s", "u"))
    Session.import_archive(tmp_path / "a.jsonl", store=store)
    assert everything(store) == original
    assert leftovers(store) == []


def archive_lines(stores: Callable[[str], SessionBase], tmp_path: Path) -> list[bytes]:
    store = stores("memory")
    build(store, pages=8)
    buffer = io.BytesIO()
    Session("s", "u", store=store).export(buffer)
    return buffer.getvalue().splitlines(keepends=True)


def resealed(lines: list[bytes]) -> bytes:
    """Lines with a fresh, matching end line: well formed, as far as the checksum goes."""
    body = b"".join(lines)
    end = {"end": {"lines": len(lines), "sha256": hashlib.sha256(body).hexdigest()}}
    return body + json.dumps(end).encode() + b"\n"


def altered_byte(lines: list[bytes]) -> bytes:
    data = bytearray(b"".join(lines))
    at = data.index(b"notes")
    data[at] = ord("N")  # still valid JSON, another text: only the digest can tell
    return bytes(data)


def record(value: Any) -> bytes:
    return json.dumps(value).encode() + b"\n"


def with_version(version: Any) -> bytes:
    return record({"archive": {"format": "praisonsession-archive", "version": version}})


def with_ttl(line: bytes, ttl: float) -> bytes:
    session = json.loads(line)
    session["session"]["ttl"] = ttl
    return record(session)


def twice_the_first_log(lines: list[bytes]) -> list[bytes]:
    """The first log and its pages written a second time, right after it (count kept)."""
    start = next(i for i, line in enumerate(lines) if line.startswith(b'{"log"'))
    end = next(i for i in range(start + 1, len(lines)) if not lines[i].startswith(b'{"messages"'))
    return [*lines[:end], *lines[start:end], *lines[end:]]


CORRUPTIONS: dict[str, Callable[[list[bytes]], bytes]] = {
    "empty file": lambda lines: b"",
    "not an archive": lambda lines: b"Dear diary,\ntoday I exported nothing.\n",
    "binary junk": lambda lines: bytes(range(256)) * 4,
    "some other JSON": lambda lines: record({"a": 1}) + record({"end": {}}),
    "truncated mid-line": lambda lines: b"".join(lines)[: len(b"".join(lines)) // 2],
    "truncated at a line": lambda lines: b"".join(lines[:-3]),
    "no end line": lambda lines: b"".join(lines[:-1]),
    "one byte altered": altered_byte,
    "bad JSON line": lambda lines: b"".join([*lines[:4], b"{not json\n", *lines[4:]]),
    "wrong header": lambda lines: resealed([record({"archive": {"format": "zip"}}), *lines[1:-1]]),
    "no version": lambda lines: resealed(
        [record({"archive": {"format": "praisonsession-archive"}}), *lines[1:-1]]
    ),
    "data after the end": lambda lines: b"".join([*lines, record({"state": {}})]),
    "lines miscounted": lambda lines: b"".join(lines[:-2]) + lines[-1],
    # well sealed (a matching digest), but not what an export writes:
    "a log longer than its pages": lambda lines: resealed(
        [
            record({"count": 10**6, "log": "notebook.pages"}) if b'"log":' in line else line
            for line in lines[:-1]
        ]
    ),
    "state is not an object": lambda lines: resealed(
        [record({"state": [1, 2]}) if line.startswith(b'{"state"') else line for line in lines[:-1]]
    ),
    "a number JSON cannot hold": lambda lines: resealed(
        [b'{"state":{"x":NaN}}\n' if line.startswith(b'{"state"') else line for line in lines[:-1]]
    ),
    "no session record": lambda lines: resealed([lines[0], *lines[2:-1]]),
    "the session record is a list": lambda lines: resealed([lines[0], b"[]\n", *lines[2:-1]]),
    "a snapshot never closed": lambda lines: resealed(
        [line for line in lines[:-1] if not line.startswith(b'{"snapshot_end"')]
    ),
    "messages are not a list": lambda lines: resealed(
        [
            record({"messages": {"role": "user"}}) if line.startswith(b'{"messages"') else line
            for line in lines[:-1]
        ]
    ),
    "an unknown record": lambda lines: resealed([*lines[:-1], record({"surprise": 1})]),
    "brackets nested 100,000 deep": lambda lines: resealed(
        [*lines[:-1], b"[" * 100_000 + b"]" * 100_000 + b"\n"]
    ),
    "version 0": lambda lines: resealed([with_version(0), *lines[1:-1]]),
    "version -1": lambda lines: resealed([with_version(-1), *lines[1:-1]]),
    "version true": lambda lines: resealed([with_version(True), *lines[1:-1]]),
    "a negative ttl": lambda lines: resealed([lines[0], with_ttl(lines[1], -5), *lines[2:-1]]),
    "a log record twice": lambda lines: resealed(twice_the_first_log(lines[:-1])),
    # the session's sections and its snapshots are fine; only the memory at the end is not
    "a memory naming another user": lambda lines: resealed(
        [*lines[:-1], record({"memory": {"text": "t", "metadata": {"user_id": "mallory"}}})]
    ),
}


@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
def test_a_corrupt_archive_raises_a_typed_error_and_imports_nothing(
    store: SessionBase,
    stores: Callable[[str], SessionBase],
    tmp_path: Path,
    corruption: str,
) -> None:
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_bytes(CORRUPTIONS[corruption](archive_lines(stores, tmp_path)))
    with pytest.raises(SessionCorruptedError) as caught:
        Session.import_archive(damaged, store=store)
    assert not isinstance(caught.value, UnsupportedFormatError)
    assert "archive" in str(caught.value)
    assert runtime.run(store.list_sessions("u")) == []
    assert runtime.run(Branches(store.backend).snapshots("s", "u")) == []
    assert leftovers(store) == []


def test_an_archive_of_a_newer_version_is_refused_and_imports_nothing(
    store: SessionBase, stores: Callable[[str], SessionBase], tmp_path: Path
) -> None:
    lines = archive_lines(stores, tmp_path)
    newer = {"archive": {"format": "praisonsession-archive", "version": ARCHIVE_VERSION + 1}}
    with pytest.raises(UnsupportedFormatError) as caught:
        Session.import_archive(io.BytesIO(resealed([record(newer), *lines[1:-1]])), store=store)
    assert (caught.value.found, caught.value.supported) == (ARCHIVE_VERSION + 1, ARCHIVE_VERSION)
    assert "Upgrade praisonsession" in str(caught.value)
    assert runtime.run(store.list_sessions("u")) == []
    assert leftovers(store) == []


def test_a_failed_export_to_a_path_leaves_no_file_behind(tmp_path: Path) -> None:
    session = Session("s", "u", store="memory://")
    session.append_messages("chat", [{"role": "user", "content": "hi"}])
    session.store.backend.read_record_contents = _vanishing  # the copy it reads goes away
    with pytest.raises(SessionCorruptedError):
        session.export(tmp_path / "a.jsonl")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


async def _vanishing(key: Any) -> None:
    return None


def test_an_archive_that_is_not_there_says_so(tmp_path: Path) -> None:
    from praisonsession import InvalidValueError

    with pytest.raises(InvalidValueError, match="no archive"):
        Session.import_archive(tmp_path / "missing.jsonl", store="memory://")


# -- memories ---------------------------------------------------------------------------------


def test_an_archive_carries_the_long_term_memories_the_session_added(
    open_session: Callable[..., Session], tmp_path: Path
) -> None:
    session = open_session("s", "ada")
    session.add_memory("Ada drinks green tea", topic="drinks")
    open_session("other", "ada").add_memory("Ada plays chess")  # not this session's
    summary = session.export(tmp_path / "a.jsonl")
    assert summary.memories == 1
    copy = Session.import_archive(
        tmp_path / "a.jsonl",
        store=f"sqlite://{tmp_path}/elsewhere.db",
        session_id="copy",
        user_id="eve",
        settings=open_session.settings,
    )
    try:
        (hit,) = copy.search_memory("tea", limit=5)
    finally:
        copy.close()
    assert hit["text"] == "Ada drinks green tea"
    assert hit["metadata"]["topic"] == "drinks"
    assert (hit["metadata"]["session_id"], hit["metadata"]["user_id"]) == ("copy", "eve")


# -- bounded memory ---------------------------------------------------------------------------


@pytest.mark.slow
def test_a_100k_message_session_exports_in_bounded_memory(tmp_path: Path) -> None:
    store = make_store("sqlite", tmp_path)
    try:
        batch = [{"role": "user", "content": "x" * 150 + f" {i}"} for i in range(10_000)]
        for _ in range(10):
            runtime.run(store.append_messages("big", "u", "log", batch))
        session = Session("big", "u", store=store)
        path = tmp_path / "big.jsonl"
        tracemalloc.start()
        started = time.perf_counter()
        try:
            summary = session.export(path)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        took = time.perf_counter() - started
    finally:
        runtime.run(store.close())
    size = path.stat().st_size
    assert summary.messages == 100_000 and size > 16_000_000
    print(f"\n100,000 messages, {size / 1e6:.1f} MB: peak {peak / 1e6:.2f} MB, {took:.1f} s")
    assert peak < size / 10, f"peak {peak:,} B while writing {size:,} B"


@pytest.mark.parametrize("sliding", [True, False], ids=["sliding", "fixed-ttl"])
def test_an_export_slower_than_the_staging_ttl_keeps_its_copy_alive(
    stores: Callable[..., SessionBase], kind: str, sliding: bool, frozen_clock: Any
) -> None:
    """Staging copies expire (what a killed export leaves goes), but not while an export
    reads them: one that takes three STAGING_TTLs in all, 0.6 of one per page, still writes
    every message, on a store whose TTLs slide or not."""
    store = stores(kind, sliding_ttl=sliding)
    runtime.run(store.append_messages("s", "u", "log", [message(i) for i in range(2_500)]))
    buffer = io.BytesIO()
    summary = runtime.run(
        export_session(
            store.backend,
            record_key("s", "u"),
            buffer,
            [],
            lambda count: frozen_clock.advance(STAGING_TTL * 0.6),
        )
    )
    assert summary.messages == 2_500
    pages = [json.loads(line).get("messages") for line in buffer.getvalue().splitlines()]
    assert [len(p) for p in pages if p is not None] == [500] * 5
    Session.import_archive(io.BytesIO(buffer.getvalue()), store=store, session_id="copy")
    assert runtime.run(store.read_messages("copy", "u", "log")) == [
        message(i) for i in range(2_500)
    ]
    assert leftovers(store) == []


@pytest.mark.parametrize("sliding", [True, False], ids=["sliding", "fixed-ttl"])
def test_an_import_slower_than_the_staging_ttl_keeps_every_staged_section(
    stores: Callable[..., SessionBase], kind: str, sliding: bool, frozen_clock: Any
) -> None:
    """An import stages the session, then each snapshot: the first staged must still be
    there when the last is written, however long that takes."""
    source, store = stores("memory"), stores(kind, sliding_ttl=sliding)
    build(source, pages=3_000)
    expected = everything(source)
    buffer = io.BytesIO()
    Session("s", "u", store=source).export(buffer)
    info, _, summary = runtime.run(
        import_session(
            store.backend,
            io.BytesIO(buffer.getvalue()),
            None,
            None,
            lambda count: frozen_clock.advance(STAGING_TTL * 0.6),
        )
    )
    assert (info.session_id, summary.messages, summary.snapshots) == ("s", 1_501, 2)
    assert everything(store) == expected
    assert leftovers(store) == []


@pytest.fixture(params=STORE_BACKENDS)
def kind(request: pytest.FixtureRequest) -> str:
    return request.param


# -- bounded lines, and nothing left by a killed export ---------------------------------------


def test_large_messages_export_in_lines_an_import_reads_and_a_longer_line_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from praisonsession.archive import exporting, layout

    monkeypatch.setattr(layout, "MAX_LINE", 4096)
    monkeypatch.setattr(exporting, "MAX_LINE", 4096)
    session = Session("s", "u", store="memory://")
    messages = [{"role": "user", "content": f"{i}:" + "x" * 900} for i in range(40)]
    session.append_messages("chat", messages)
    session.export(tmp_path / "a.jsonl")
    lines = (tmp_path / "a.jsonl").read_bytes().splitlines(keepends=True)
    assert max(map(len, lines)) <= 4096 and len(lines) > 10  # the page of 40 was split
    copy = Session.import_archive(tmp_path / "a.jsonl", store="memory://")
    assert copy.read_messages("chat") == messages
    session.append_messages("chat", [{"role": "user", "content": "y" * 5000}])
    with pytest.raises(InvalidValueError, match="at most 4,096 bytes"):
        session.export(tmp_path / "b.jsonl")
    assert not (tmp_path / "b.jsonl").exists()
    (tmp_path / "c.jsonl").write_bytes(resealed([*lines[:-1], record({"x": "z" * 5000})]))
    with pytest.raises(SessionCorruptedError, match="longer than 4,096 bytes"):
        Session.import_archive(tmp_path / "c.jsonl", store="memory://")


def test_a_killed_export_leaves_no_file_at_all(tmp_path: Path) -> None:
    """The archive has no name until it is complete: SIGKILL in the middle leaves nothing."""
    script = f"""
import os, signal
from praisonsession import Session
from praisonsession.archive import exporting

session = Session("s", "u", store="memory://")
session.append_messages("chat", [{{"role": "user", "content": f"n{{i}}"}} for i in range(2000)])
write = exporting._Writer.write
def write_then_die(self, record):
    write(self, record)
    if self.lines == 3:
        self.file.flush()
        os.kill(os.getpid(), signal.SIGKILL)
exporting._Writer.write = write_then_die
session.export({str(tmp_path / "a.jsonl")!r})
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, timeout=120)
    assert done.returncode == -signal.SIGKILL
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_complete_copy_left_by_an_export_killed_before_its_rename_goes_at_the_next(
    tmp_path: Path,
) -> None:
    """Killed after the archive was linked under its hidden name, before the rename: the next
    export to that file removes the dead process's copy (and keeps a live one's)."""
    script = f"""
import os, signal
from praisonsession import Session

session = Session("s", "u", store="memory://")
session.set_state("secret", "a whole copy of it")
replace = os.replace
def die_before_the_rename(source, target):
    if str(source).endswith(".complete"):
        os.kill(os.getpid(), signal.SIGKILL)
    replace(source, target)
os.replace = die_before_the_rename
session.export({str(tmp_path / "a.jsonl")!r})
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, timeout=120)
    assert done.returncode == -signal.SIGKILL
    left = [p.name for p in tmp_path.iterdir()]
    assert len(left) == 1 and left[0].startswith(".a.jsonl.") and left[0].endswith(".complete")
    running = f".a.jsonl.{os.getppid()}.complete"  # a live process's export in progress
    (tmp_path / running).write_bytes(b"in progress")
    session = Session("s", "u", store="memory://")
    session.set_state("n", 1)
    session.export(tmp_path / "a.jsonl")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([running, "a.jsonl"])
