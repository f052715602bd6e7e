"""SQLite reads made by one statement: a session plainly live is read without a transaction.

A read needs the session's liveness (its format, expiry and TTL) and what it asks for, from
one snapshot. SQLite reads one snapshot per statement, so a state key, the whole state,
module documents, a log's tail, range or length come with the liveness columns in one
``SELECT`` (and a record's info is one ``SELECT`` already), with no ``BEGIN`` and ``COMMIT``
around it. Anything else goes the full way, a transaction that says why a session is not
live, slides a TTL, adopts AgentScope's data or takes a stamp, and both ways answer alike.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from praisonsession import SessionCorruptedError, SessionExpiredError, clock, open_store
from praisonsession._internal import runtime
from praisonsession.stores import Key, LogWrite, SessionBase
from praisonsession.stores.backends.sqlite.backend import SqliteBackend
from praisonsession.stores.guard import beneath

KEY = Key("alice", "chat")


def run(work: Any) -> Any:
    return runtime.run(work, inline=True)  # on this thread, as the sync facade runs a store


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SessionBase]:
    opened = open_store(f"sqlite://{tmp_path / 'reads.db'}")
    yield opened
    run(opened.close())


def statements_of(store: SessionBase, read: Any) -> tuple[Any, list[str]]:
    """What ``read`` returned, and the statements it ran on this thread's connection."""
    seen: list[str] = []
    conn = beneath(store.backend)._opened().conn  # type: ignore[attr-defined]
    conn.set_trace_callback(seen.append)
    try:
        return run(read), seen
    finally:
        conn.set_trace_callback(None)


def fill(store: SessionBase) -> None:
    run(store.patch_state("chat", "alice", {"name": "Ada", "score": 3}))
    backend = store.backend
    run(backend.write_modules(KEY, documents={"agent": {"n": 1}, "plan": {"step": 2}}, writes=[]))
    run(backend.write_modules(KEY, documents={"logged": {"m": 1}}, writes=[]))
    run(backend.append_log(KEY, write=LogWrite("logged.memory", [{"content": "hi"}], -1)))
    turns = [{"role": "user", "content": f"turn {n}"} for n in range(5)]
    run(backend.append_log(KEY, write=LogWrite("chat", turns, None)))


def reads(backend: Any) -> dict[str, Any]:
    """Every read that has a one-statement way, and what each returns."""
    return {
        "one key": run(backend.read_record_state(KEY, names=["name"], must_exist=False)),
        "a key not held": run(backend.read_record_state(KEY, names=["nope"], must_exist=False)),
        "every key": run(backend.read_record_state(KEY, names=None, must_exist=False)),
        "documents": run(backend.read_modules(KEY, names=["agent", "plan", "nope"])),
        "no document held": run(backend.read_modules(KEY, names=["nope"])),
        "a document with a log below": run(backend.read_modules(KEY, names=["logged"])),
        "the record": run(backend.read_record(KEY)),
        "a record not held": run(backend.read_record(Key("alice", "nope"))),
        "a log's tail": run(backend.read_log(KEY, path="chat", start=-2, stop=None)),
        "a log's range": run(backend.read_log(KEY, path="chat", start=1, stop=3)),
        "a log from a start": run(backend.read_log(KEY, path="chat", start=3, stop=None)),
        "a range past the end": run(backend.read_log(KEY, path="chat", start=9, stop=12)),
        "a log not held": run(backend.read_log(KEY, path="nope", start=-2, stop=None)),
        "a log's length": run(backend.count_log(KEY, path="chat")),
        "the length of a log not held": run(backend.count_log(KEY, path="nope")),
        "a log of no session": run(
            backend.read_log(Key("alice", "nope"), path="chat", start=0, stop=None)
        ),
    }


def test_a_plainly_live_sessions_read_is_one_select_without_a_transaction(
    store: SessionBase,
) -> None:
    fill(store)
    backend = store.backend
    for read in (
        backend.read_record_state(KEY, names=["name"], must_exist=True),
        backend.read_record_state(KEY, names=None, must_exist=True),
        backend.read_modules(KEY, names=["agent", "plan"]),
        backend.read_record(KEY),
        backend.read_log(KEY, path="chat", start=-2, stop=None),
        backend.read_log(KEY, path="chat", start=1, stop=3),
        backend.count_log(KEY, path="chat"),
    ):
        found, statements = statements_of(store, read)
        assert found
        assert len(statements) == 1 and statements[0].startswith("SELECT"), statements


def test_both_ways_answer_alike(store: SessionBase, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same reads with the one-statement way turned off answer the same: values,
    documents, a key or document not held, and the logs below a document (which the full
    way reads)."""
    fill(store)
    at_once = reads(store.backend)
    assert at_once["one key"] == {"name": "Ada"}
    assert at_once["every key"] == {"name": "Ada", "score": 3}
    assert at_once["documents"].documents == {"agent": {"n": 1}, "plan": {"step": 2}}
    assert at_once["a document with a log below"].logs == {"logged.memory": [{"content": "hi"}]}
    assert at_once["the record"].version > 1 and at_once["a record not held"] is None
    turns = [{"role": "user", "content": f"turn {n}"} for n in range(5)]
    assert at_once["a log's tail"] == turns[-2:]
    assert at_once["a log's range"] == turns[1:3]
    assert at_once["a log from a start"] == turns[3:]
    assert at_once["a range past the end"] == at_once["a log not held"] == []
    assert at_once["a log of no session"] == []
    assert (at_once["a log's length"], at_once["the length of a log not held"]) == (5, 0)
    monkeypatch.setattr(SqliteBackend, "_read_at_once", lambda *_: None)
    assert reads(store.backend) == at_once


def test_a_sliding_ttl_moves_by_one_more_statement_and_an_expired_session_is_not_read(
    tmp_path: Path, frozen_clock: clock.ManualClock
) -> None:
    """A read of a session whose TTL slides is the one statement, then one ``UPDATE`` of its
    expiry, outside a transaction: no ``BEGIN``, the version and update time left as they
    were (a read changes nothing). A session expired is not read at all: gone, or an error
    with ``must_exist``."""
    store = open_store(f"sqlite://{tmp_path / 'ttl.db'}", default_ttl=60)
    run(store.patch_state("chat", "alice", {"name": "Ada"}))
    written = run(store.get_info("chat", "alice"))
    frozen_clock.advance(50)
    found, statements = statements_of(
        store, store.backend.read_record_state(KEY, names=["name"], must_exist=True)
    )
    assert found == {"name": "Ada"}
    assert len(statements) == 2 and "BEGIN" not in statements
    assert statements[0].startswith("SELECT") and statements[1].startswith("UPDATE ps_state")
    slid = run(store.get_info("chat", "alice"))
    assert slid.expires_at == pytest.approx(frozen_clock() + 60)
    assert (slid.version, slid.updated_at) == (written.version, written.updated_at)
    plain = open_store(f"sqlite://{tmp_path / 'plain.db'}")
    run(plain.patch_state("chat", "alice", {"name": "Ada"}))
    run(plain.touch("chat", "alice", ttl=60))
    found, statements = statements_of(
        plain, plain.backend.read_record_state(KEY, names=["name"], must_exist=True)
    )
    assert found == {"name": "Ada"}
    assert len(statements) == 2 and statements[1].startswith("UPDATE ps_state")
    run(plain.close())
    frozen_clock.advance(50)  # 100 s after the write, 50 after the read that slid it
    assert run(store.get_state("chat", "alice")) == {"name": "Ada"}
    frozen_clock.advance(61)
    assert run(store.backend.read_record_state(KEY, names=["name"], must_exist=False)) == {}
    with pytest.raises(SessionExpiredError):
        run(store.backend.read_record_state(KEY, names=None, must_exist=True))
    run(store.close())


def test_a_read_made_in_a_transaction_slides_by_one_statement_after_it(
    tmp_path: Path, frozen_clock: clock.ManualClock
) -> None:
    """A read with no one-statement way (a log's tail and documents together) is a read
    transaction; the slide after it is the same one ``UPDATE``, not a transaction of its own."""
    store = open_store(f"sqlite://{tmp_path / 'both.db'}", default_ttl=60)
    fill(store)
    frozen_clock.advance(30)
    (tail, stored), statements = statements_of(
        store,
        store.backend.read_log_and_modules(
            KEY, path="chat", start=-2, stop=None, names=lambda _: ["agent"]
        ),
    )
    assert [m["content"] for m in tail] == ["turn 3", "turn 4"]
    assert stored is not None and stored.documents == {"agent": {"n": 1}}
    assert statements[0] == "BEGIN" and statements.count("COMMIT") == 1
    after = statements[statements.index("COMMIT") + 1 :]
    assert len(after) == 1 and after[0].startswith("UPDATE ps_state SET expires_at")
    assert run(store.get_info("chat", "alice")).expires_at == pytest.approx(frozen_clock() + 60)
    run(store.close())


def test_a_read_inside_a_stamp_slides_in_a_transaction_the_stamp_sees(
    tmp_path: Path, frozen_clock: clock.ManualClock
) -> None:
    """A stamp's bookkeeping sees every transaction of its operation, so a read made inside
    one slides in a transaction of its own rather than by the one statement; a record whose
    TTL slides gets no stamp."""
    store = open_store(f"sqlite://{tmp_path / 'stamped.db'}", default_ttl=60)
    fill(store)
    frozen_clock.advance(30)
    backend = beneath(store.backend)

    def read() -> Any:
        return backend.read_log_and_modules(
            KEY, path="chat", start=-1, stop=None, names=lambda _: ["agent"]
        )

    done, statements = statements_of(store, backend.stamped(KEY, read))
    (tail, _) = done.value
    assert [m["content"] for m in tail] == ["turn 4"] and done.stamp is None
    slide = statements[statements.index("BEGIN IMMEDIATE") :]
    assert slide[-1] == "COMMIT"
    assert any(statement.startswith("UPDATE ps_state SET expires_at") for statement in slide)
    assert run(store.get_info("chat", "alice")).expires_at == pytest.approx(frozen_clock() + 60)
    run(store.close())


def test_a_slide_the_file_does_not_take_at_once_is_made_the_full_way(
    tmp_path: Path, frozen_clock: clock.ManualClock
) -> None:
    """Another connection holding the write lock: the read's ``UPDATE`` finds the file busy,
    and the read goes the full way (a transaction that waits for the lock, then slides)."""
    path = tmp_path / "busy.db"
    store = open_store(f"sqlite://{path}", default_ttl=60)
    run(store.patch_state("chat", "alice", {"name": "Ada"}))
    frozen_clock.advance(30)
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    timer = threading.Timer(0.2, holder.execute, ("ROLLBACK",))
    timer.start()
    try:
        found, statements = statements_of(
            store, store.backend.read_record_state(KEY, names=["name"], must_exist=True)
        )
    finally:
        timer.join()
        holder.close()
    assert found == {"name": "Ada"}
    assert statements[1].startswith("UPDATE ps_state")  # busy: the full way after it
    assert "BEGIN" in statements and "BEGIN IMMEDIATE" in statements
    assert run(store.get_info("chat", "alice")).expires_at == pytest.approx(frozen_clock() + 60)
    run(store.close())


def test_a_damaged_value_or_document_read_at_once_is_named(
    store: SessionBase, tmp_path: Path
) -> None:
    fill(store)
    with sqlite3.connect(tmp_path / "reads.db") as db:
        db.execute("UPDATE ps_state SET value='{broken' WHERE name='score'")
        db.execute("UPDATE ps_modules SET document='[1,' WHERE name='plan'")
    db.close()
    backend = store.backend
    assert run(backend.read_record_state(KEY, names=["name"], must_exist=True)) == {"name": "Ada"}
    with pytest.raises(SessionCorruptedError, match="score"):
        run(backend.read_record_state(KEY, names=["score"], must_exist=True))
    with pytest.raises(SessionCorruptedError, match="score"):
        run(backend.read_record_state(KEY, names=None, must_exist=True))
    with pytest.raises(SessionCorruptedError, match="plan"):
        run(backend.read_modules(KEY, names=["agent", "plan"]))
    with sqlite3.connect(tmp_path / "reads.db") as db:
        db.execute("UPDATE ps_entries SET message='{cut' WHERE message LIKE '%turn 4%'")
    db.close()
    assert run(backend.read_log(KEY, path="chat", start=0, stop=2))[1]["content"] == "turn 1"
    with pytest.raises(SessionCorruptedError, match="'chat'"):
        run(backend.read_log(KEY, path="chat", start=-1, stop=None))


def test_a_value_written_by_hand_reads_as_json_reads_it(store: SessionBase, tmp_path: Path) -> None:
    """A stored value is read by JSON's scanner alone when it is one value edge to edge;
    whitespace around it (another writer's JSON) still reads, and what JSON refuses (data
    after the value, a byte-order mark, no value at all) is a damaged value, named, alone
    or in a whole state's read."""
    fill(store)
    written = {"name": ' \n"Ada" ', "score": "[1, 2]\t"}
    damaged = {"name": '"Ada" 3', "score": '\ufeff{"a": 1}', "agent": ""}
    backend = store.backend
    for values, readable in ((written, True), (damaged, False)):
        with sqlite3.connect(tmp_path / "reads.db") as db:
            for name, value in values.items():
                db.execute(
                    "INSERT OR REPLACE INTO ps_state (user_id, session_id, name, value) "
                    "VALUES ('alice', 'chat', ?, ?)",
                    (name, value),
                )
        db.close()
        for name in values:
            read = backend.read_record_state(KEY, names=[name], must_exist=True)
            if readable:
                assert run(read) == {name: json.loads(values[name])}
            else:
                with pytest.raises(SessionCorruptedError, match=name):
                    run(read)
        if readable:
            whole = run(backend.read_record_state(KEY, names=None, must_exist=True))
            assert whole == {"name": "Ada", "score": [1, 2]}
        else:
            with pytest.raises(SessionCorruptedError):
                run(backend.read_record_state(KEY, names=None, must_exist=True))


def test_a_state_narrowed_by_fields_is_narrowed_in_one_select(
    store: SessionBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite tests the fields itself (``json_extract``), so only the values that hold them
    come back to be decoded: besides those, only a value that is no object (which it
    cannot test), and both ways answer alike."""
    items = {f"k{n}": {"value": {"n": n % 10, "text": f"note {n}"}} for n in range(100)}
    run(store.patch_state("chat", "alice", {**items, "plain": "text"}))
    backend = store.backend
    fields = [(("value", "n"), 7), (("value", "text"), "note 17")]
    found, statements = statements_of(
        store, backend.read_record_state_matching(KEY, fields=fields, must_exist=True)
    )
    assert found == {"k17": items["k17"], "plain": "text"}
    assert len(statements) == 1 and statements[0].startswith("SELECT"), statements
    everything = run(backend.read_record_state_matching(KEY, fields=[], must_exist=True))
    assert len(everything) == 101
    monkeypatch.setattr(SqliteBackend, "_read_at_once", lambda *_: None)
    assert run(backend.read_record_state_matching(KEY, fields=fields, must_exist=True)) == found


def test_a_damaged_value_read_narrowed_is_named(
    store: SessionBase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A value that is not JSON stops SQLite's test of it; the read then goes the plain
    way, which says which key is damaged: read at once or in a transaction."""
    fill(store)
    with sqlite3.connect(tmp_path / "reads.db") as db:
        db.execute("UPDATE ps_state SET value='{broken' WHERE name='score'")
    db.close()
    narrowed = store.backend.read_record_state_matching
    with pytest.raises(SessionCorruptedError, match="score"):
        run(narrowed(KEY, fields=[(("n",), 1)], must_exist=True))
    monkeypatch.setattr(SqliteBackend, "_read_at_once", lambda *_: None)
    with pytest.raises(SessionCorruptedError, match="score"):
        run(narrowed(KEY, fields=[(("n",), 1)], must_exist=True))


def test_a_state_narrowed_to_the_newest_is_cut_by_sqlite(store: SessionBase) -> None:
    """SQLite sorts by the path itself and hands back the ``count`` greatest values (ties by
    key), and the values it cannot test; given fields it can test, it narrows by those alone
    (each costs a parse of every value, and a filter narrows more than an order)."""
    items = {f"k{n:02}": {"at": n // 2, "kind": "odd" if n % 2 else "even"} for n in range(40)}
    run(store.patch_state("chat", "alice", {**items, "plain": "text"}))
    narrowed = store.backend.read_record_state_matching
    found = run(narrowed(KEY, fields=[], must_exist=True, newest=(("at",), 3)))
    assert found == {"k38": items["k38"], "k39": items["k39"], "k36": items["k36"], "plain": "text"}
    found = run(narrowed(KEY, fields=[(("kind",), "even")], must_exist=True, newest=(("at",), 2)))
    assert set(found) == {name for name, item in items.items() if item["kind"] == "even"} | {
        "plain"
    }
