"""AgentScope's own files and keys (``layout="agentscope"``, the bound API, imports) go through
the key guard like every record: a store without the key reads and writes none of them in an
encrypted store, and a store with another key changes nothing. Without the rule, a keyless
process could plant AgentScope data that a key holder's store adopts as a plain session of its
own, and its reads of that session fail from then on.

On real files (JSON) and a real Redis server.
"""

from __future__ import annotations

import asyncio
import base64
import json
import sqlite3
from collections.abc import Iterator
from contextlib import closing, suppress
from pathlib import Path

import pytest
import redis

from backends import RawAccess, redis_prefix, redis_store_url
from praisonsession import (
    DecryptionError,
    EncryptedStore,
    KeyRequiredError,
    SessionBase,
    StateModule,
)
from praisonsession.stores import JSONSession, RedisSession, SqliteSession

KEY = base64.urlsafe_b64encode(b"k" * 32).decode()
OTHER_KEY = base64.urlsafe_b64encode(b"o" * 32).decode()


class Notes(StateModule):
    def __init__(self, title: str = "") -> None:
        super().__init__()
        self.title = title
        self.register_state("title")


@pytest.fixture(params=["json", "redis"])
def kind(request: pytest.FixtureRequest) -> str:
    if request.param == "redis":
        request.getfixturevalue("redis_url")
    return str(request.param)


class Place:
    """One store's data (a directory, or a Redis key prefix), opened as each test needs it."""

    def __init__(self, kind: str, root: Path) -> None:
        self.kind, self.root = kind, root
        self.opened: list[SessionBase] = []

    def open(self, layout: str = "native") -> SessionBase:
        store: SessionBase
        if self.kind == "json":
            store = JSONSession(self.root / "j", layout=layout)
        elif self.kind == "sqlite":
            store = SqliteSession(self.root / "s.db")
        else:
            store = RedisSession.from_url(redis_store_url(self.root), layout=layout)
        self.opened.append(store)
        return store

    def sealed(self, key: str = KEY, layout: str = "native") -> SessionBase:
        store = EncryptedStore(self.open(layout), key)
        self.opened.append(store)
        return store

    def agentscope_data(self, session_id: str, user_id: str) -> dict[str, object] | None:
        """What AgentScope itself would read for the session, straight from the files/keys."""
        if self.kind == "json":
            path = self.root / "j" / f"{user_id}_{session_id}.json"
            return json.loads(path.read_text("utf-8")) if path.exists() else None
        name = f"{redis_prefix(self.root)}user_id:{user_id}:session:{session_id}:state"
        client = redis.Redis.from_url(redis_store_url(self.root).split("?")[0])
        try:
            raw = client.get(name)
        finally:
            client.close()
        return None if raw is None else json.loads(raw)

    def plant(self, name: str, modules: dict[str, object]) -> str:
        """AgentScope data written as AgentScope writes it: a file, or a key; its name."""
        text = json.dumps(modules)
        if self.kind == "json":
            path = self.root / "elsewhere" / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, "utf-8")
            return str(path)
        full = f"{redis_prefix(self.root)}{name}"
        client = redis.Redis.from_url(redis_store_url(self.root).split("?")[0])
        try:
            client.set(full, text)
        finally:
            client.close()
        return full

    def close(self) -> None:
        for store in self.opened:
            asyncio.run(store.close())


@pytest.fixture
def place(kind: str, tmp_path: Path) -> Iterator[Place]:
    found = Place(kind, tmp_path)
    yield found
    found.close()


def title_of(store: SessionBase, session_id: str, user_id: str = "bob") -> str:
    notes = Notes()
    asyncio.run(store.load_session_state(session_id, user_id, notes=notes))
    return notes.title


def test_a_store_without_the_key_keeps_no_agentscope_data_in_an_encrypted_store(
    place: Place,
) -> None:
    owner = place.sealed()
    asyncio.run(owner.save_session_state("s1", "bob", notes=Notes("the owner's")))
    keyless = place.open(layout="agentscope")

    for session_id in ("s1", "s2"):  # the owner's session, and one the owner has not made yet
        with pytest.raises(KeyRequiredError):
            asyncio.run(keyless.save_session_state(session_id, "bob", notes=Notes("planted")))
        assert place.agentscope_data(session_id, "bob") is None  # nothing written
        with pytest.raises(KeyRequiredError):
            title_of(keyless, session_id)

    # the owner reads its session, and makes s2 as if nobody had tried (nothing to adopt)
    assert title_of(owner, "s1") == "the owner's"
    asyncio.run(owner.save_session_state("s2", "bob", notes=Notes("made later")))
    assert title_of(owner, "s2") == "made later"
    assert [info.session_id for info in asyncio.run(owner.list_sessions("bob"))] == ["s1", "s2"]


def test_importing_agentscope_data_needs_the_key_in_an_encrypted_store(place: Place) -> None:
    owner = place.sealed()
    asyncio.run(owner.save_session_state("s1", "bob", notes=Notes("the owner's")))
    planted = place.plant("bob_s3.json", {"notes": {"title": "planted"}})
    keyless = place.open()
    assert isinstance(keyless, (JSONSession, RedisSession))
    with pytest.raises(KeyRequiredError):
        asyncio.run(keyless.import_agentscope(planted, "s3", "bob"))
    assert not asyncio.run(owner.exists("s3", "bob"))
    assert [info.session_id for info in asyncio.run(owner.list_sessions("bob"))] == ["s1"]


def test_another_key_changes_nothing_through_the_agentscope_layout(place: Place) -> None:
    owner = place.sealed()
    asyncio.run(owner.save_session_state("s1", "bob", notes=Notes("the owner's")))
    # an encrypted store keeps modules sealed in its own records, whatever the inner layout
    stranger = place.sealed(OTHER_KEY, layout="agentscope")
    with pytest.raises(DecryptionError):
        asyncio.run(stranger.save_session_state("s1", "bob", notes=Notes("overwritten")))
    with pytest.raises(DecryptionError):
        title_of(stranger, "s1")
    assert place.agentscope_data("s1", "bob") is None
    assert title_of(owner, "s1") == "the owner's"


def test_a_plain_store_keeps_agentscope_data_as_before(place: Place) -> None:
    keyless = place.open(layout="agentscope")
    asyncio.run(keyless.save_session_state("s1", "bob", notes=Notes("plain")))
    assert place.agentscope_data("s1", "bob") == {"notes": {"title": "plain"}}
    assert title_of(keyless, "s1") == "plain"


def test_agentscopes_calls_on_a_sqlite_file_need_the_sessions_key(tmp_path: Path) -> None:
    """SQLite keeps AgentScope's calls in its own records (it has no AgentScope layout to write):
    without the key, or with another, they read and change nothing of a sealed session."""
    from praisonsession.stores import SqliteSession

    path = tmp_path / "s.db"
    stores: list[SessionBase] = []

    def opened(key: str | None) -> SessionBase:
        store: SessionBase = SqliteSession(sqlite_path=path)
        stores.append(store)
        if key is not None:
            store = EncryptedStore(store, key)
            stores.append(store)
        return store

    try:
        owner = opened(KEY)
        asyncio.run(owner.save_session_state("s1", "bob", notes=Notes("the owner's")))
        for key, refusal in ((None, KeyRequiredError), (OTHER_KEY, DecryptionError)):
            other = opened(key)
            with pytest.raises(refusal):
                asyncio.run(other.save_session_state("s1", "bob", notes=Notes("overwritten")))
            with pytest.raises(refusal):
                title_of(other, "s1")
        assert title_of(owner, "s1") == "the owner's"
        assert asyncio.run(owner.get_info("s1", "bob")).version == 1  # type: ignore[union-attr]
    finally:
        for store in stores:
            asyncio.run(store.close())


# -- AgentScope data a store finds beside its own (adopted on opening or on first read) -----------


@pytest.fixture(params=["sqlite", "json", "redis"])
def found_in(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Place]:
    """A store's place (file, directory or Redis prefix) that an encrypted store uses, in which
    AgentScope's own SqliteSession / JSONSession / RedisSession also left session ``chat1``."""
    if request.param == "redis":
        request.getfixturevalue("redis_url")
    place = Place(request.param, tmp_path)
    owner = place.sealed()  # the store is encrypted: its owner has written a session
    asyncio.run(owner.save_session_state("s1", "bob", notes=Notes("the owner's")))
    RawAccess(place.open()).write_agentscope("chat1", {"notes": {"title": "AgentScope's"}})
    yield place
    place.close()


def raw_contents(place: Place) -> dict[str, object]:
    """Everything the store's place holds, read beneath every store: rows, files, keys."""
    if place.kind == "sqlite":
        with closing(sqlite3.connect(place.root / "s.db")) as db:
            return {"rows": [line for line in db.iterdump() if line.startswith("INSERT")]}
    if place.kind == "json":
        return {  # a lock file is the empty file a lock is taken on, never a session
            str(path): path.read_bytes()
            for path in (place.root / "j").rglob("*")
            if path.is_file() and not path.name.endswith(".lock")
        }
    client = redis.Redis.from_url(redis_store_url(place.root).split("?")[0])
    try:
        return {str(key): client.dump(key) for key in client.keys(f"{redis_prefix(place.root)}*")}
    finally:
        client.close()


@pytest.mark.parametrize("key", [None, OTHER_KEY], ids=["without a key", "with another key"])
def test_agentscope_data_beside_an_encrypted_store_is_adopted_only_with_its_key(
    found_in: Place, key: str | None
) -> None:
    """Without the key (or with another) a read adopts nothing: no plain session appears in the
    encrypted store, not a row, file or key changes, and the read is refused as any read of the
    store's data is. Adoption writes a session, so the guard admits it like every write."""
    before = raw_contents(found_in)
    other = found_in.open() if key is None else found_in.sealed(key)
    refusal = KeyRequiredError if key is None else DecryptionError
    with pytest.raises(refusal):
        title_of(other, "chat1", "")
    for _ in range(2):  # asked again, still nothing: refused, or not there
        with suppress(refusal):
            assert not asyncio.run(other.exists("chat1"))
    assert raw_contents(found_in) == before


def test_agentscope_data_beside_an_encrypted_store_is_sealed_when_adopted(
    found_in: Place,
) -> None:
    """With the key, the data is adopted as any session this store writes: sealed under the key
    (a store without it cannot read it), once."""
    owner = found_in.sealed()
    assert title_of(owner, "chat1", "") == "AgentScope's"
    with pytest.raises(KeyRequiredError):
        title_of(found_in.open(), "chat1", "")
    again = found_in.sealed()  # another process with the key: the adopted session, sealed
    assert title_of(again, "chat1", "") == "AgentScope's"
    asyncio.run(again.delete_session("chat1"))
    assert not asyncio.run(found_in.sealed().exists("chat1"))  # adopted once, never brought back


def test_an_erasure_beneath_the_guard_leaves_agentscope_data_to_the_guard(tmp_path: Path) -> None:
    """An erasure works beneath the guard (it removes data whatever sealed it): on a file just
    opened, whose ``as_session`` table holds a session not adopted yet, it erases the user and
    adopts nothing; the store adopts it through its guard when it next opens the file."""
    from praisonsession import aerase_user

    path = tmp_path / "s.db"
    store = SqliteSession(path)
    asyncio.run(store.patch_state("x", "bob", {"a": 1}))
    RawAccess(store).write_agentscope("chat1", {"notes": {"title": "AgentScope's"}})
    asyncio.run(store.close())

    opened = SqliteSession(path)
    try:
        report = asyncio.run(aerase_user("bob", opened))
        assert report.session_ids == ["x"]
        with closing(sqlite3.connect(path)) as db:
            assert db.execute("SELECT count(*) FROM ps_imported").fetchone() == (0,)
        asyncio.run(opened.close())  # offered once per opening: the next one offers it again
        assert title_of(opened, "chat1", "") == "AgentScope's"
    finally:
        asyncio.run(opened.close())
