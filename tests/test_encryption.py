"""Encryption at rest (``encryption_key``): nothing readable in the files, plaintext and tampered
records refused with a typed error, copies and archives round-trip, increments and appends
exact under many processes. The store conformance suite also runs on an encrypted store
(``TestEncrypted`` in ``test_store_conformance.py``)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from backends import make_store
from praisonsession import (
    DecryptionError,
    EncryptedStore,
    InvalidSettingError,
    InvalidValueError,
    KeyRequiredError,
    Session,
    SessionBase,
    SessionCorruptedError,
    StateModule,
)
from praisonsession._internal import runtime
from praisonsession.state import MessageLog
from praisonsession.stores import LogWrite, record_key
from praisonsession.stores.guard import beneath
from praisonsession.stores.wrappers.encrypted import EncryptedBackend

KEY = base64.urlsafe_b64encode(b"k" * 32).decode()
OTHER_KEY = base64.urlsafe_b64encode(b"o" * 32).decode()
STRANGER_KEY = base64.urlsafe_b64encode(b"x" * 32).decode()
SECRET = "pelican-4471"


class Notes(StateModule):
    def __init__(self) -> None:
        super().__init__()
        self.title = ""
        self.register_state("title")
        self.log = MessageLog()


@pytest.fixture(params=["memory", "json", "sqlite", "redis", "postgres"])
def kind(request: pytest.FixtureRequest) -> str:
    if request.param in ("redis", "postgres"):
        request.getfixturevalue(f"{request.param}_url")
    return request.param


@pytest.fixture
def plain(kind: str, tmp_path: Path) -> Iterator[SessionBase]:
    store = make_store(kind, tmp_path)
    yield store
    runtime.run(store.close())


def sealed_session(plain: SessionBase, session_id: str = "s", key: str = KEY) -> Session:
    return Session(session_id, "u", store=EncryptedStore(plain, key))


def raw_state(plain: SessionBase, session_id: str = "s", user_id: str = "u") -> dict[str, Any]:
    """What the inner store holds, read under its API as someone with store access would."""
    key = record_key(session_id, user_id)
    return runtime.run(beneath(plain.backend).read_record_state(key, names=None, must_exist=False))


def raw_set(plain: SessionBase, session_id: str, name: str, value: Any, user_id: str = "u") -> None:
    key = record_key(session_id, user_id)
    runtime.run(
        beneath(plain.backend).patch_record_state(
            key,
            updates={name: value},
            deletes=[],
            replace=False,
            expected_version=None,
            must_exist=False,
        )
    )


def fill(session: Session) -> None:
    session.set_state("secret", {"text": SECRET, "n": [1, 2.5, None]})
    session.increment_state("count", 3)
    session.append_messages("chat", [{"role": "user", "content": f"my {SECRET}"}])
    notes = Notes()
    notes.title = f"title {SECRET}"
    notes.log.append({"role": "assistant", "content": f"noted {SECRET}"})
    session.save_modules(notes=notes)
    runtime.run(session.store.set_metadata(session.session_id, session.user_id, topic=SECRET))


def contents(session: Session) -> Any:
    notes = Notes()
    session.load_modules(notes=notes)
    return (
        session.restore_state(),
        session.read_messages("chat"),
        notes.title,
        notes.log.messages_since(0),
        session.get_info().metadata["topic"],
    )


EXPECTED = (
    {"secret": {"text": SECRET, "n": [1, 2.5, None]}, "count": 3},
    [{"role": "user", "content": f"my {SECRET}"}],
    f"title {SECRET}",
    [{"role": "assistant", "content": f"noted {SECRET}"}],
    SECRET,
)


def test_everything_round_trips_and_nothing_is_stored_in_the_clear(
    plain: SessionBase, kind: str, tmp_path: Path
) -> None:
    session = sealed_session(plain)
    fill(session)
    assert contents(session) == EXPECTED
    assert raw_state(plain)["count"].startswith("psenc1:")  # the inner store holds only seals
    if kind in ("json", "sqlite"):
        stored = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
        assert b"chat" in stored  # names stay readable; the texts do not
        assert SECRET.encode() not in stored


def test_forks_snapshots_and_archives_keep_working(plain: SessionBase, tmp_path: Path) -> None:
    session = sealed_session(plain)
    fill(session)
    fork = session.fork("child", user_id="v")
    snapshot = session.snapshot(f"label {SECRET}")
    session.set_state("secret", "changed")
    assert contents(fork) == EXPECTED
    reopened = Session("child", "v", store=EncryptedStore(plain, KEY))  # opening merges, keeps
    assert contents(reopened) == EXPECTED  # the key of the session it was copied from
    session.restore(snapshot)
    assert contents(session) == EXPECTED
    assert session.snapshots()[0].label == f"label {SECRET}"
    session.export(tmp_path / "a.jsonl")
    archive = (tmp_path / "a.jsonl").read_bytes()
    assert SECRET.encode() not in archive and b'"sealed":true' in archive.splitlines()[0]
    with pytest.raises(InvalidValueError, match="is encrypted"):
        Session.import_archive(tmp_path / "a.jsonl", store=make_store("memory", tmp_path))
    imported = Session.import_archive(
        tmp_path / "a.jsonl", store=EncryptedStore(plain, KEY), session_id="copy"
    )
    assert contents(imported) == EXPECTED
    assert raw_state(plain, "copy")["count"].startswith("psenc1:")


def test_a_plaintext_record_is_refused_not_trusted(plain: SessionBase) -> None:
    Session("s", "u", store=plain).set_state("secret", SECRET)
    Session("s", "u", store=plain).append_messages("chat", [{"content": SECRET}])
    session = sealed_session(plain)
    with pytest.raises(DecryptionError, match="not encrypted") as caught:
        session.get_state("secret")
    assert SECRET not in str(caught.value)
    with pytest.raises(DecryptionError, match="not encrypted"):
        session.read_messages("chat")


def test_a_tampered_moved_or_foreign_value_is_refused(plain: SessionBase) -> None:
    session = sealed_session(plain)
    session.set_state("a", SECRET)
    session.set_state("b", "other")
    sealed = raw_state(plain)["a"]
    flipped = sealed[:-6] + ("A" if sealed[-6] != "A" else "B") + sealed[-5:]
    raw_set(plain, "s", "a", flipped)
    with pytest.raises(DecryptionError, match="does not open"):
        session.get_state("a")
    raw_set(plain, "s", "b", sealed)  # a valid seal, moved to another key
    with pytest.raises(DecryptionError, match="does not open"):
        session.get_state("b")
    raw_set(plain, "t", "a", sealed)  # and to another session
    with pytest.raises(DecryptionError):
        sealed_session(plain, "t").get_state("a")
    sealed_session(plain, "w").set_state("a", SECRET)
    with pytest.raises(DecryptionError, match="it is sealed with the key key-"):
        sealed_session(plain, "w", key=OTHER_KEY).get_state("a")


def test_a_forged_origin_opens_nothing_of_another_users_session(plain: SessionBase) -> None:
    from praisonsession.stores.wrappers.encrypted import ORIGIN

    victim = sealed_session(plain, "s")
    victim.set_state("a", SECRET)
    victim_info = runtime.run(beneath(plain.backend).read_record(record_key("s", "u")))
    assert victim_info is not None
    stolen = raw_state(plain)["a"]  # someone with store access, no key
    raw = beneath(plain.backend)  # write access to the data itself, around any guard
    mallory = record_key("m", "mallory")
    for forged in (["u", "s"], victim_info.metadata[ORIGIN]):  # in clear, or the victim's seal
        runtime.run(
            raw.patch_record_state(
                mallory,
                updates={"a": stolen},
                deletes=[],
                replace=False,
                expected_version=None,
                must_exist=False,
            )
        )
        runtime.run(raw.merge_record_metadata(mallory, metadata={ORIGIN: forged}))
        with pytest.raises(DecryptionError) as caught:
            Session("m", "mallory", store=EncryptedStore(plain, KEY)).get_state("a")
        assert SECRET not in str(caught.value)
        runtime.run(raw.delete_record(mallory))


def test_forks_and_snapshots_an_older_version_wrote_stay_readable_and_rekey_seals_them(
    plain: SessionBase,
) -> None:
    """Older versions named a copy's origin in clear. Where a forged one could open only the
    same user's own data (a fork of the user's, a snapshot of that very session) it is read
    as it is; a fork to another user waits for ``rekey``, which seals every such origin."""
    from praisonsession.session.rotation import rekey
    from praisonsession.stores.backend import UNSET
    from praisonsession.stores.reserved import snapshot_key
    from praisonsession.stores.wrappers.encrypted import ORIGIN

    source = sealed_session(plain, "s")
    source.set_state("secret", SECRET)
    source.append_messages("chat", CHAT)
    older = {ORIGIN: ["u", "s"]}  # what an older version's copy carried
    own_fork, snapshot = record_key("f", "u"), snapshot_key(record_key("s", "u"), "snap1")
    for where in (own_fork, record_key("f", "v"), snapshot):
        copy = beneath(plain.backend).copy_record(
            record_key("s", "u"), where, cut=None, metadata=older, replace=False, ttl=UNSET
        )
        runtime.run(copy)
    sealed = EncryptedStore(plain, KEY)
    assert runtime.run(sealed.get_state("f", "u")) == {"secret": SECRET}
    assert runtime.run(sealed.read_messages("f", "u", "chat")) == CHAT
    contents = runtime.run(sealed.backend.read_record_contents(snapshot))
    assert contents is not None and contents.state == {"secret": SECRET}
    with pytest.raises(DecryptionError, match="rekey") as caught:  # another user's: not yet
        runtime.run(sealed.get_state("f", "v"))
    assert SECRET not in str(caught.value)

    rekey(KEY, KEY, plain, vector_store=None)
    assert runtime.run(sealed.get_state("f", "v")) == {"secret": SECRET}
    for where in (own_fork, record_key("f", "v"), snapshot):
        info = runtime.run(beneath(plain.backend).read_record(where))
        assert info is not None and isinstance(info.metadata[ORIGIN], str)  # sealed now
    assert runtime.run(sealed.read_messages("f", "u", "chat")) == CHAT


def test_a_session_recreated_by_another_process_is_never_written_under_a_stale_key(
    plain: SessionBase,
) -> None:
    first = sealed_session(plain, "x")  # a long-running process: it knows x's key
    first.set_state("n", 1)
    source = sealed_session(plain, "src")
    source.set_state("from", "src")
    other = Session("x", "u", store=EncryptedStore(plain, KEY))  # another process
    other.delete()
    source.fork("x")  # x is now a copy of src, sealed under src's key
    first.set_state("n", 2)  # the first process writes on
    first.append_messages("chat", [{"role": "user", "content": SECRET}])
    fresh = Session("x", "u", store=EncryptedStore(plain, KEY))
    assert fresh.get_state("n") == 2 and fresh.get_state("from") == "src"
    assert fresh.read_messages("chat") == [{"role": "user", "content": SECRET}]


def _branches(store: SessionBase) -> Any:
    from praisonsession.stores.branches import Branches

    return Branches(store.backend)


KEYLESS_WRITES: dict[str, Any] = {
    "open a Session": lambda p: Session("s", "u", store=p),
    "create_session": lambda p: p.create_session("s", "u", metadata={"a": 1}),
    "set_metadata": lambda p: p.set_metadata("s", "u", topic="plain"),
    "patch_state": lambda p: p.patch_state("s", "u", {"a": "plain"}),
    "delete a key": lambda p: p.patch_state("s", "u", delete=["secret"]),
    "replace_state": lambda p: p.replace_state("s", "u", {"a": 1}),
    "increment": lambda p: p.increment("s", "u", "count"),
    "append_messages": lambda p: p.append_messages("s", "u", "chat", [{"content": "x"}]),
    "clear_messages": lambda p: p.clear_messages("s", "u", "chat"),
    "save_session_state": lambda p: p.save_session_state("s", "u", notes=Notes()),
    "fork": lambda p: _branches(p).fork("s", "u", "copy"),
    "snapshot": lambda p: _branches(p).snapshot("s", "u"),
}
KEYLESS_READS: dict[str, Any] = {
    "get_state": lambda p: p.get_state("s", "u"),
    "get_value": lambda p: p.get_value("s", "u", "count"),
    "read_messages": lambda p: p.read_messages("s", "u", "chat"),
    "load_session_state": lambda p: p.load_session_state("s", "u", notes=Notes()),
    "get_info": lambda p: p.get_info("s", "u"),
    "list_sessions": lambda p: p.list_sessions("u"),
    "snapshots": lambda p: _branches(p).snapshots("s", "u"),
}


async def _call(work: Any) -> Any:
    return await work if hasattr(work, "__await__") else work


@pytest.mark.parametrize("call", [*KEYLESS_WRITES, *KEYLESS_READS])
def test_a_process_without_a_key_is_refused_naming_the_key_by_fingerprint(
    plain: SessionBase, call: str
) -> None:
    sealed = sealed_session(plain)
    fill(sealed)
    sealed.snapshot(f"label {SECRET}")
    before = raw_state(plain)
    fingerprint = EncryptedBackend(plain.backend, KEY).fingerprint
    with pytest.raises(KeyRequiredError) as caught:
        runtime.run(_call({**KEYLESS_WRITES, **KEYLESS_READS}[call](plain)))
    message = str(caught.value)
    assert caught.value.fingerprint == fingerprint and fingerprint in message
    assert KEY not in message and "psenc" not in message and SECRET not in message
    assert "without an encryption key" in message
    assert raw_state(plain) == before  # nothing was written
    assert contents(sealed_session(plain)) == EXPECTED  # and the key still opens everything
    assert runtime.run(beneath(plain.backend).read_record(record_key("copy", "u"))) is None


def test_a_keyless_store_writes_its_own_sessions_until_the_store_is_encrypted(
    plain: SessionBase,
) -> None:
    mine = Session("mine", "u", store=plain)
    mine.set_state("a", "psenc1:short")  # a string that only looks like a seal is a value
    mine.append_messages("chat", [{"content": "hi"}])
    assert mine.get_state("a") == "psenc1:short"
    assert mine.read_messages("chat") == [{"content": "hi"}]
    fill(sealed_session(plain, "s2"))  # the store is encrypted from its first sealed write
    with pytest.raises(KeyRequiredError):
        Session("new", "u", store=plain).set_state("a", 1)
    assert mine.get_state("a") == "psenc1:short"  # what it wrote before is still read


def test_a_keyless_write_cannot_make_a_key_holders_listing_fail(plain: SessionBase) -> None:
    """Defect 2: a process without the key once made a session (its metadata in clear) that
    made every listing of the key holder raise DecryptionError. The store knows it is
    encrypted: every keyless write is refused, a new session's included, before it writes."""
    holder = EncryptedStore(plain, KEY)
    fill(Session("s", "u", store=holder))
    for attempt in (
        lambda: plain.create_session("mallory", "u", metadata={"app:theme": "dark"}),
        lambda: plain.patch_state("shop", "u", {"app:theme": "dark"}),
        lambda: plain.append_messages("other", "u", "chat", [{"a": 1}]),
    ):
        with pytest.raises(KeyRequiredError):
            runtime.run(attempt())
    assert [i.session_id for i in runtime.run(holder.list_sessions("u"))] == ["s"]
    assert contents(Session("s", "u", store=holder)) == EXPECTED


def _truncate(backend: Any, key: Any) -> Any:
    return backend.truncate_log(key, path="chat", length=0, expected=None)


#: Every write of the backend protocol that changes a record in place: what the framework
#: adapters, the server's store routes and archive imports call, with no store API between.
BACKEND_WRITES: dict[str, Any] = {
    "create_record": lambda b, k: b.create_record(k, ttl=None, metadata={"a": 1}),
    "merge_record_metadata": lambda b, k: b.merge_record_metadata(k, metadata={"a": 1}),
    "patch_record_state": lambda b, k: b.patch_record_state(
        k, updates={"a": 1}, deletes=[], replace=False, expected_version=None, must_exist=False
    ),
    "increment_record_value": lambda b, k: b.increment_record_value(
        k, name="count", amount=1, default=0, must_exist=False
    ),
    "write_modules": lambda b, k: b.write_modules(k, documents={"notes": {}}, writes=[]),
    "create_record_with_modules": lambda b, k: b.create_record_with_modules(
        k, metadata={"a": 1}, documents={"notes": {}}, writes=[LogWrite("chat", [], 0)]
    ),
    "append_log": lambda b, k: b.append_log(k, write=LogWrite("chat", [{"content": "x"}], -1)),
    "truncate_log": _truncate,
}


@pytest.fixture(params=["json", "sqlite", "redis", "postgres"])
def shared_kind(request: pytest.FixtureRequest) -> str:
    """A store that another object (another process) can open too."""
    if request.param in ("redis", "postgres"):
        request.getfixturevalue(f"{request.param}_url")
    return request.param


@pytest.mark.parametrize("write", list(BACKEND_WRITES))
def test_a_store_without_a_key_opened_apart_refuses_inside_the_backend_write(
    shared_kind: str, tmp_path: Path, write: str
) -> None:
    """Another process's store (here another store object on the same data) holds no key: its
    guard refuses the write, so no caller can get past it; the store is encrypted, so its own
    new sessions are refused too."""
    kind = shared_kind
    sealed_store = make_store(kind, tmp_path)
    keyless = make_store(kind, tmp_path)
    try:
        fill(sealed_session(sealed_store))
        before = raw_state(sealed_store)
        fingerprint = EncryptedBackend(sealed_store.backend, KEY).fingerprint
        with pytest.raises(KeyRequiredError) as caught:
            runtime.run(BACKEND_WRITES[write](keyless.backend, record_key("s", "u")))
        assert caught.value.fingerprint == fingerprint
        assert raw_state(sealed_store) == before
        assert contents(sealed_session(sealed_store)) == EXPECTED
        # its own new sessions are refused too, and a sealed one through its API
        with pytest.raises(KeyRequiredError):
            runtime.run(keyless.increment("mine", "u", "count"))
        with pytest.raises(KeyRequiredError):
            runtime.run(keyless.append_messages("s", "u", "chat", [{"content": "x"}]))
    finally:
        runtime.run(keyless.close())
        runtime.run(sealed_store.close())


@pytest.mark.parametrize("copy", ["fork", "restore"])
def test_a_store_without_a_key_opened_apart_copies_no_encrypted_session(
    shared_kind: str, tmp_path: Path, copy: str
) -> None:
    """No backend refuses a copy itself: a fork or a restore reads the record first, even on
    a backend that refuses every other write on its own (a keyless restore once left an
    encrypted session with a plain value it could no longer open)."""
    sealed_store = make_store(shared_kind, tmp_path)
    keyless = make_store(shared_kind, tmp_path)
    try:
        sealed = sealed_session(sealed_store)
        fill(sealed)
        snapshot = sealed.snapshot("before")
        before = raw_state(sealed_store)
        branches = _branches(keyless)
        attempt = {
            "fork": lambda: branches.fork("s", "u", "copy"),
            "restore": lambda: branches.restore("s", "u", snapshot),
        }[copy]
        with pytest.raises(KeyRequiredError):
            runtime.run(attempt())
        assert raw_state(sealed_store) == before
        assert runtime.run(keyless.backend.read_record(record_key("copy", "u"))) is None
        assert contents(sealed_session(sealed_store)) == EXPECTED  # metadata still opens
    finally:
        runtime.run(keyless.close())
        runtime.run(sealed_store.close())


#: What destroys data: a delete, a truncation, ending a TTL.
BACKEND_DELETES: dict[str, Any] = {
    "delete_record": lambda b, k: b.delete_record(k),
    "truncate_log": _truncate,
    "touch_record": lambda b, k: b.touch_record(k, ttl=0.0),
}


@pytest.mark.parametrize("write", [*BACKEND_WRITES, *BACKEND_DELETES])
def test_a_wrong_key_writes_and_deletes_nothing(plain: SessionBase, write: str) -> None:
    """Defect 1: ``pop_item()`` from a process with another key removed the last item, then
    raised DecryptionError. The guard reads the record first: nothing changes."""
    fill(sealed_session(plain))
    before = (
        raw_state(plain),
        runtime.run(beneath(plain.backend).read_log(KEY_S, path="chat", start=0, stop=None)),
    )
    other = EncryptedStore(plain, OTHER_KEY)
    with pytest.raises(DecryptionError):
        runtime.run({**BACKEND_WRITES, **BACKEND_DELETES}[write](other.backend, KEY_S))
    after = (
        raw_state(plain),
        runtime.run(beneath(plain.backend).read_log(KEY_S, path="chat", start=0, stop=None)),
    )
    assert after == before
    assert contents(sealed_session(plain)) == EXPECTED


@pytest.mark.parametrize("write", [*BACKEND_WRITES, *BACKEND_DELETES])
def test_without_a_key_every_write_and_delete_of_an_encrypted_store_is_refused(
    plain: SessionBase, write: str
) -> None:
    """Defect 7: deleting without the key is refused alike for every caller (the adapters
    call these operations on ``store.backend``, the guard)."""
    fill(sealed_session(plain))
    before = runtime.run(beneath(plain.backend).read_record_contents(KEY_S))
    with pytest.raises(KeyRequiredError):
        runtime.run({**BACKEND_WRITES, **BACKEND_DELETES}[write](plain.backend, KEY_S))
    assert runtime.run(beneath(plain.backend).read_record_contents(KEY_S)) == before
    with pytest.raises(KeyRequiredError):
        runtime.run(plain.delete_session("s", "u"))
    assert contents(sealed_session(plain)) == EXPECTED


KEY_S = record_key("s", "u")


def test_the_key_comes_from_settings_the_environment_or_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite://{tmp_path}/s.db"
    Session("s", store=url, settings={"encryption_key": KEY}).set_state("k", SECRET)
    (tmp_path / "key").write_text(KEY + "\n")
    from_file = Session("s", store=url, settings={"encryption_key_file": str(tmp_path / "key")})
    assert from_file.get_state("k") == SECRET
    monkeypatch.setenv("PRAISONSESSION_ENCRYPTION_KEY", KEY)
    assert Session("s", store=url).get_state("k") == SECRET
    assert SECRET.encode() not in (tmp_path / "s.db").read_bytes()


@pytest.mark.parametrize(
    "key", ["short", KEY[:-4], "!" * 44, base64.urlsafe_b64encode(b"x" * 31).decode()]
)
def test_a_bad_key_is_refused_without_being_shown(key: str, tmp_path: Path) -> None:
    with pytest.raises(InvalidSettingError, match="32 bytes") as caught:
        Session("s", store=f"sqlite://{tmp_path}/s.db", settings={"encryption_key": key})
    assert key not in str(caught.value)
    assert not (tmp_path / "s.db").exists()


@pytest.fixture(params=["json", "sqlite", "redis"])
def shared_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "redis":
        from backends import redis_store_url

        request.getfixturevalue("redis_url")
        return redis_store_url(tmp_path)
    return {"json": f"json://{tmp_path}/j", "sqlite": f"sqlite://{tmp_path}/s.db"}[request.param]


def run_together(*args: Any) -> dict[str, list[int]]:
    from test_processes import run_together as run

    return run(*args)


@pytest.mark.slow
def test_increments_and_appends_stay_exact_under_many_processes(
    shared_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PRAISONSESSION_ENCRYPTION_KEY", KEY)  # the workers inherit it
    results = run_together("increment", shared_url, tmp_path, 60)
    returned = sorted(v for values in results.values() for v in values)
    assert returned == list(range(1, 4 * 60 + 1))  # every value handed out exactly once
    script = (
        "import sys\nfrom praisonsession import Session\n"
        "s = Session('shared', 'u', store=sys.argv[1])\n"
        "for i in range(40): s.append_messages('log', [{'content': f'{sys.argv[2]}-{i}'}])\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, shared_url, f"p{n}"], cwd=tmp_path)
        for n in range(3)
    ]
    assert [p.wait(timeout=300) for p in procs] == [0, 0, 0]
    session = Session("shared", "u", store=shared_url)
    assert session.get_state("hits") == 240
    log = [m["content"] for m in session.read_messages("log")]
    assert sorted(log) == sorted(f"p{n}-{i}" for n in range(3) for i in range(40))
    for n in range(3):  # each process's messages in the order it sent them
        mine = [int(c.split("-")[1]) for c in log if c.startswith(f"p{n}-")]
        assert mine == list(range(40))
    monkeypatch.delenv("PRAISONSESSION_ENCRYPTION_KEY")
    with pytest.raises(KeyRequiredError):  # a process without the key reads no ciphertext
        Session("shared", "u", store=shared_url).get_state("hits")
    session.close()
    assert json.dumps(os.environ.get("PRAISONSESSION_ENCRYPTION_KEY")) == "null"


def test_rekey_cut_short_loses_nothing_and_a_second_run_finishes(
    plain: SessionBase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from praisonsession.stores.wrappers import encrypted

    for n in range(6):
        fill(sealed_session(plain, f"s{n}"))
    sealed_session(plain, "s0").fork("child", user_id="v")
    sealed_session(plain, "s0").snapshot(f"label {SECRET}")

    writes = 0
    real = EncryptedBackend.write_modules

    async def crash_on_the_fourth(self: Any, *args: Any, **kwargs: Any) -> Any:
        nonlocal writes
        writes += 1
        if writes == 4:
            raise OSError("the disk failed")  # as a crash would stop it, halfway
        return await real(self, *args, **kwargs)

    monkeypatch.setattr(EncryptedBackend, "write_modules", crash_on_the_fourth)
    with pytest.raises(OSError, match="disk failed"):
        runtime.run(encrypted.rekey(plain, KEY, OTHER_KEY))
    monkeypatch.setattr(EncryptedBackend, "write_modules", real)
    both = EncryptedStore(plain, OTHER_KEY, old_keys=(KEY,))
    for n in range(6):  # half old, half new: all of it opens with the two keys
        assert contents(Session(f"s{n}", "u", store=both)) == EXPECTED

    from click.testing import CliRunner

    from praisonsession.apps.cli import main

    (tmp_path / "old.key").write_text(KEY + "\n")
    (tmp_path / "new.key").write_text(OTHER_KEY + "\n")
    if isinstance(plain, type(make_store("memory", tmp_path))):
        runtime.run(encrypted.rekey(plain, KEY, OTHER_KEY))
    else:
        result = CliRunner().invoke(
            main,
            [
                "rekey",
                "--old-key-file",
                str(tmp_path / "old.key"),
                "--new-key-file",
                str(tmp_path / "new.key"),
                "--store",
                plain.url,
                "--yes",
            ],
        )
        assert result.exit_code == 0, result.output
        assert "Sealed 8 sessions" in result.output  # six, the fork and the snapshot
    for n in range(6):
        assert contents(sealed_session(plain, f"s{n}", key=OTHER_KEY)) == EXPECTED
    assert contents(Session("child", "v", store=EncryptedStore(plain, OTHER_KEY))) == EXPECTED
    only_new = sealed_session(plain, "s0", key=OTHER_KEY)
    assert only_new.snapshots()[0].label == f"label {SECRET}"
    with pytest.raises(DecryptionError):
        sealed_session(plain, "s1").get_state("secret")  # the old key opens nothing now


def test_rekey_goes_on_past_a_session_neither_key_opens_and_names_it_at_the_end(
    plain: SessionBase,
) -> None:
    from praisonsession.session.rotation import rekey

    for n in (0, 2, 3):
        fill(sealed_session(plain, f"s{n}"))
    fill(sealed_session(plain, "s1", key=STRANGER_KEY))  # sealed with a third key
    with pytest.raises(DecryptionError) as caught:
        rekey(KEY, OTHER_KEY, plain, vector_store=None)
    said = str(caught.value)
    assert "session 's1' of user 'u'" in said and "neither the old nor the new key" in said
    assert "Every other entry was rotated: 3 sessions " in said  # (and 0 vector entries)
    assert "now open with the new key" in said
    assert "Nothing was changed" not in said
    for n in (0, 2, 3):  # before and after the one that does not open: rotated
        assert contents(sealed_session(plain, f"s{n}", key=OTHER_KEY)) == EXPECTED
    assert contents(sealed_session(plain, "s1", key=STRANGER_KEY)) == EXPECTED  # left as it was


def test_memory_and_knowledge_texts_are_sealed_and_still_found(tmp_path: Path) -> None:
    settings = {"data_dir": str(tmp_path / "data"), "encryption_key": KEY}
    session = Session("s", "u", store=f"sqlite://{tmp_path}/s.db", settings=settings)
    session.add_memory(f"Ada keeps her passport number {SECRET} in the blue folder")
    session.add_knowledge(f"The meeting about {SECRET} is on Friday in room 4.")
    (hit,) = session.search_memory("where is the passport", limit=1)
    assert hit["text"] == f"Ada keeps her passport number {SECRET} in the blue folder"
    assert SECRET in session.search_knowledge("when is the meeting", limit=1)[0]["text"]
    session.close()
    stored = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    assert SECRET.encode() not in stored and b"passport" not in stored
    other = {"data_dir": str(tmp_path / "other")}
    Session("s", "u", store="memory://", settings=other).add_memory(f"plain {SECRET}")
    sealed = Session("s", "u", store="memory://", settings={**other, "encryption_key": KEY})
    with pytest.raises(DecryptionError, match="not encrypted") as caught:
        sealed.search_memory("plain")  # a text stored without the key is refused, not trusted
    assert SECRET not in str(caught.value)


def test_memory_ids_and_duplicate_keys_are_keyed_hashes_under_encryption(
    tmp_path: Path,
) -> None:
    from praisonsession.recall.memory.lifecycle import memory_id_for, text_key

    text = f"Ada keeps her passport number {SECRET} in the blue folder"
    settings = {"data_dir": str(tmp_path / "data"), "encryption_key": KEY}
    store = f"sqlite://{tmp_path}/s.db"
    session = Session("s", "u", store=store, settings=settings)
    memory_id = session.add_memory(text)
    assert memory_id != memory_id_for("u", text)  # not the plain hash of the text...
    assert session.add_memory(text.upper()) == memory_id  # ...and still found again
    assert Session("t", "u", store=store, settings=settings).add_memory(text).event == "NONE"
    other_user = Session("s", "v", store=store, settings=settings).add_memory(text)
    keys = {
        user: runtime.run(Session("s", user, store=store, settings=settings)._core._memory())
        .long.index.get()[0]
        .metadata["text_key"]
        for user in ("u", "v")
    }
    assert keys["u"] != keys["v"]  # equal texts of two users do not match in the store
    assert text_key(text) not in keys.values() and other_user != memory_id

    # ids stay what they were through a fork, a snapshot and an archive, still encrypted
    child = session.fork("child")
    assert child.get_memory(memory_id)["text"] == text
    session.restore(session.snapshot("before"))
    assert session.get_memory(memory_id)["text"] == text
    session.export(tmp_path / "a.jsonl")
    imported = Session.import_archive(
        tmp_path / "a.jsonl", store=f"sqlite://{tmp_path}/b.db", user_id="w", settings=settings
    )
    assert imported.get_memory(memory_id)["text"] == text
    for opened in (session, child, imported):
        opened.close()
    stored = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    for plain_digest in (memory_id_for("u", text), text_key(text)):
        assert plain_digest.encode() not in stored

    # without the key, ids are the plain hashes they always were
    unsealed = {"data_dir": str(tmp_path / "plain")}
    assert Session("s", "u", store="memory://", settings=unsealed).add_memory(text) == (
        memory_id_for("u", text)
    )


def test_a_memory_stored_under_a_plain_key_is_found_again_and_rekeyed(tmp_path: Path) -> None:
    settings = {"data_dir": str(tmp_path / "data"), "encryption_key": KEY}
    session = Session("s", "u", store=f"sqlite://{tmp_path}/s.db", settings=settings)
    long = runtime.run(session._core._memory()).long
    digest_key, long.digest_key = long.digest_key, None  # as stored before keyed hashes
    old = session.add_memory("User's locker code is in the red notebook")
    long.digest_key = digest_key
    again = session.add_memory("User's locker code is in the red notebook")
    assert (again, again.event) == (old, "NONE")  # the same memory, id kept, no update
    assert [c["event"] for c in session.memory_history(old)] == ["ADD"]
    (entry,) = long.index.get()
    assert entry.metadata["text_key"] == long._key(entry.text)  # now under the keyed digest
    assert session.add_memory("User's locker code is in the red notebook").event == "NONE"


def test_knowledge_chunk_ids_are_keyed_and_chunks_stored_before_are_not_added_twice(
    tmp_path: Path,
) -> None:
    settings = {"data_dir": str(tmp_path / "data"), "encryption_key": KEY}
    session = Session("s", "u", store=f"sqlite://{tmp_path}/s.db", settings=settings)
    kb = runtime.run(session._core._memory()).knowledge
    digest_key, kb.digest_key = kb.digest_key, None  # as stored before keyed ids
    assert session.add_knowledge(f"Old notes: the code word is {SECRET}.").chunks_added == 1
    kb.digest_key = digest_key
    assert session.add_knowledge(f"Old notes: the code word is {SECRET}.").chunks_added == 0
    added = session.add_knowledge(f"New notes: the vault opens on {SECRET} day.")
    assert added.chunks_added == 1
    ids = {hit.id for hit in kb.index.get()}
    new_text = f"New notes: the vault opens on {SECRET} day."
    assert kb._chunk_id(new_text) in ids and kb._chunk_id(new_text, keyed=False) not in ids
    assert session.add_knowledge(new_text).chunks_added == 0


def test_a_sealed_archive_imported_with_another_key_is_invalid_value(
    plain: SessionBase, tmp_path: Path
) -> None:
    session = sealed_session(plain)
    fill(session)
    session.export(tmp_path / "a.jsonl")
    with pytest.raises(InvalidValueError, match="exported with the key key-") as caught:
        Session.import_archive(
            tmp_path / "a.jsonl", store=EncryptedStore(plain, OTHER_KEY), session_id="x"
        )
    assert KEY not in str(caught.value) and OTHER_KEY not in str(caught.value)
    # an archive from before the header named its key: its first record tells the key apart
    lines = (tmp_path / "a.jsonl").read_bytes().splitlines(keepends=True)
    header = json.loads(lines[0])
    del header["archive"]["key"]
    body = [json.dumps(header).encode() + b"\n", *lines[1:-1]]
    end = {"end": {"lines": len(body), "sha256": hashlib.sha256(b"".join(body)).hexdigest()}}
    (tmp_path / "old.jsonl").write_bytes(b"".join(body) + json.dumps(end).encode() + b"\n")
    with pytest.raises(InvalidValueError, match="exported with another key"):
        Session.import_archive(
            tmp_path / "old.jsonl", store=EncryptedStore(plain, OTHER_KEY), session_id="x"
        )
    assert runtime.run(beneath(plain.backend).read_record(record_key("x", "u"))) is None
    imported = Session.import_archive(
        tmp_path / "old.jsonl", store=EncryptedStore(plain, KEY), session_id="y"
    )
    assert contents(imported) == EXPECTED


def test_a_sealed_archive_with_lines_swapped_is_refused(plain: SessionBase, tmp_path: Path) -> None:
    session = sealed_session(plain)
    fill(session)
    session.export(tmp_path / "a.jsonl")
    lines = (tmp_path / "a.jsonl").read_bytes().splitlines(keepends=True)
    body = [lines[0], lines[2], lines[1], *lines[3:-1]]  # two sealed lines swapped
    end = {"end": {"lines": len(body), "sha256": hashlib.sha256(b"".join(body)).hexdigest()}}
    (tmp_path / "b.jsonl").write_bytes(b"".join(body) + json.dumps(end).encode() + b"\n")
    with pytest.raises(DecryptionError):  # the digest matches; each line is bound to its place
        Session.import_archive(
            tmp_path / "b.jsonl", store=EncryptedStore(plain, KEY), session_id="x"
        )
    assert runtime.run(beneath(plain.backend).read_record(record_key("x", "u"))) is None


def raw_log(plain: SessionBase, path: str, session_id: str = "s", user_id: str = "u") -> Any:
    return runtime.run(
        beneath(plain.backend).read_log(
            record_key(session_id, user_id), path=path, start=0, stop=None
        )
    )


def raw_put_log(plain: SessionBase, path: str, messages: Any, session_id: str = "s") -> None:
    """Rewrite a log as someone with write access to the store (and no key) would."""
    from praisonsession.stores.backend import LogWrite

    write = LogWrite(path, messages, None)
    runtime.run(
        beneath(plain.backend).write_modules(
            record_key(session_id, "u"), documents={}, writes=[write]
        )
    )


CHAT = [{"role": "user", "content": f"{SECRET} {n}"} for n in range(4)]
#: What someone with write access does to a log's sealed messages, and the first one refused.
PLACEMENTS: dict[str, tuple[Any, int]] = {
    "swap": (lambda m: [m[0], m[2], m[1], m[3]], 1),
    "drop in the middle": (lambda m: [m[0], m[2], m[3]], 1),
    "replay at the end": (lambda m: [*m, m[1]], 4),
    "replay in the middle": (lambda m: [m[0], m[0], m[1], m[2], m[3]], 1),
    "first moved last": (lambda m: [*m[1:], m[0]], 0),
}


@pytest.mark.parametrize("attack", list(PLACEMENTS))
def test_a_message_swapped_dropped_or_replayed_inside_its_log_is_refused(
    plain: SessionBase, attack: str
) -> None:
    session = sealed_session(plain)
    session.append_messages("chat", CHAT[:2])
    session.append_messages("chat", CHAT[2:])  # appended in two steps: positions go on
    assert session.read_messages("chat") == CHAT
    change, refused = PLACEMENTS[attack]
    raw_put_log(plain, "chat", change(raw_log(plain, "chat")))
    with pytest.raises(DecryptionError, match=f"message {refused} of log 'chat'") as caught:
        session.read_messages("chat")
    assert SECRET not in str(caught.value)
    with pytest.raises(DecryptionError, match=f"message {refused} of log 'chat'"):
        session.read_messages("chat", refused)  # a read from the middle is placed too


@pytest.mark.parametrize("attack", ["swap", "drop in the middle"])
def test_a_session_made_by_its_first_write_is_marked_sealed_and_binds_positions(
    plain: SessionBase, attack: str
) -> None:
    """No create_session first (an adapter appends straight away): the record is made marked,
    so a store without the key is refused and a message is bound to its position."""
    sealed = EncryptedStore(plain, KEY)
    runtime.run(sealed.append_messages("s", "u", "chat", CHAT))
    info = runtime.run(beneath(plain.backend).read_record(record_key("s", "u")))
    assert info is not None and "\x1esealed_with" in info.metadata
    with pytest.raises(KeyRequiredError):
        runtime.run(SessionBase(plain.backend).patch_state("s", "u", {"a": 1}))
    change, refused = PLACEMENTS[attack]
    raw_put_log(plain, "chat", change(raw_log(plain, "chat")))
    with pytest.raises(DecryptionError, match=f"message {refused} of log 'chat'"):
        runtime.run(sealed.read_messages("s", "u", "chat"))


def test_the_backend_below_the_store_api_hands_out_no_ciphertext_without_a_key(
    plain: SessionBase,
) -> None:
    """What the adapters and the server's store routes call: ``store.backend``, the guard."""
    fill(sealed_session(plain))
    keyless = plain.backend
    key = record_key("s", "u")
    reads = {
        "read_record": lambda: keyless.read_record(key),
        "read_record_state": lambda: keyless.read_record_state(key, names=None, must_exist=False),
        "read_modules": lambda: keyless.read_modules(key, names=["notes"]),
        "read_log": lambda: keyless.read_log(key, path="chat", start=0, stop=None),
        "read_record_contents": lambda: keyless.read_record_contents(key),
        "list_records": lambda: keyless.list_records("u", limit=10, after=None),
    }
    for name, read in reads.items():
        with pytest.raises(KeyRequiredError):
            runtime.run(read())
            pytest.fail(f"{name} handed out ciphertext")
    with pytest.raises(KeyRequiredError):  # the store is encrypted: no new session either
        runtime.run(
            keyless.append_log(record_key("mine", "u"), write=LogWrite("chat", [{"a": 1}], -1))
        )
    assert (
        runtime.run(keyless.read_log(record_key("mine", "u"), path="chat", start=0, stop=None))
        == []
    )


def test_a_message_copied_to_another_log_session_or_user_is_refused(plain: SessionBase) -> None:
    session = sealed_session(plain)
    session.append_messages("chat", CHAT)
    sealed = raw_log(plain, "chat")
    session.append_messages("other", [{"content": "x"}] * 4)
    raw_put_log(plain, "other", sealed)  # another log of the same session
    with pytest.raises(DecryptionError, match="message 0 of log 'other'"):
        session.read_messages("other")
    for session_id, user_id in (("t", "u"), ("s", "v")):  # another session, another user
        target = Session(session_id, user_id, store=EncryptedStore(plain, KEY))
        target.append_messages("chat", [{"content": "x"}] * 4)
        key = record_key(session_id, user_id)
        from praisonsession.stores.backend import LogWrite

        runtime.run(
            beneath(plain.backend).write_modules(
                key, documents={}, writes=[LogWrite("chat", sealed, None)]
            )
        )
        with pytest.raises(DecryptionError, match="message 0 of log 'chat'"):
            target.read_messages("chat")


def test_a_truncated_tail_is_not_detected_as_documented(plain: SessionBase) -> None:
    session = sealed_session(plain)
    session.append_messages("chat", CHAT)
    raw_put_log(plain, "chat", raw_log(plain, "chat")[:2])  # no length is kept apart from it
    assert session.read_messages("chat") == CHAT[:2]
    key = record_key("s", "u")  # a slice from the end, as the backend protocol allows
    assert (
        runtime.run(session.store.backend.read_log(key, path="chat", start=-1, stop=None))
        == CHAT[1:2]
    )


@pytest.mark.parametrize("where", ["postgres", "json"])
def test_a_cut_tail_is_detected_where_the_store_records_the_length(
    where: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """PostgreSQL records each log's length in the session's row, JSON in the session's
    document: messages removed behind the store's back, the length left, are refused."""
    import backends

    if where == "postgres":
        request.getfixturevalue("postgres_url")
    store = make_store(where, tmp_path)
    session = sealed_session(store)
    session.append_messages("chat", CHAT)
    if where == "postgres":
        import psycopg

        schema = backends.postgres_schema(tmp_path)
        with psycopg.connect(str(backends.POSTGRES_URL), autocommit=True) as conn:
            conn.execute(
                f'DELETE FROM "{schema}".ps_messages WHERE log = %s AND seq >= 2', ["chat"]
            )
        expected: type[Exception] = DecryptionError
        match = "the store records 4 messages and holds 2"
    else:
        (log_file,) = [p for p in (tmp_path / "json-store").rglob("*") if p.suffix == ".jsonl"]
        lines = log_file.read_bytes().splitlines(keepends=True)
        log_file.write_bytes(b"".join(lines[:2]))
        expected, match = SessionCorruptedError, "chat"
    with pytest.raises(expected, match=match) as caught:
        session.read_messages("chat")
    assert SECRET not in str(caught.value)
    if where == "postgres":  # what is there still opens (a JSON log file is damaged whole)
        assert session.read_messages("chat", 0, 2) == CHAT[:2]
    runtime.run(store.close())


def test_messages_of_the_older_format_stay_readable_and_rekey_binds_them_to_positions(
    plain: SessionBase,
) -> None:
    from praisonsession.stores.backend import LogWrite
    from praisonsession.stores.wrappers import encrypted

    older = EncryptedBackend(plain.backend, KEY)  # seals as the version before did: per log
    key = record_key("s", "u")
    runtime.run(beneath(plain.backend).create_record(key, ttl=None, metadata={}))
    v1 = [{"sealed": older._seal(("u", "s"), "log", "chat", m)} for m in CHAT]
    assert all(m["sealed"].startswith("psenc1:") for m in v1)
    runtime.run(
        beneath(plain.backend).write_modules(key, documents={}, writes=[LogWrite("chat", v1, None)])
    )
    session = sealed_session(plain)
    assert session.read_messages("chat") == CHAT
    session.append_messages("chat", [{"content": "new"}])  # new ones are bound to positions
    assert raw_log(plain, "chat")[4]["sealed"].startswith("psenc2:")
    assert runtime.run(encrypted.rekey(plain, KEY, KEY)) == 1
    upgraded = raw_log(plain, "chat")
    assert all(m["sealed"].startswith("psenc2:") for m in upgraded)
    assert sealed_session(plain).read_messages("chat") == [*CHAT, {"content": "new"}]
    raw_put_log(plain, "chat", [upgraded[0], v1[1], *upgraded[2:]])  # an old one put back
    with pytest.raises(DecryptionError, match=r"message 1 of log 'chat'.*not sealed to its"):
        sealed_session(plain).read_messages("chat")
