"""Erasure that leaves nothing: after ``erase_user``, a scan of every byte a backend keeps (its
files, with SQLite's write-ahead log, every Redis key and value, every file of the PostgreSQL
server's directory with its WAL) and of the embedded vector store finds none of the user's
texts, ids or names, while another user's data is all there.
"""

from __future__ import annotations

import base64
import struct
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import backends
from backends import make_store, postgres_schema, redis_prefix
from chroma_server import ChromaServer, chroma_command
from praisonsession import EncryptedStore, Session, SessionBase, SessionNotFoundError, erase_user
from praisonsession._internal import runtime
from praisonsession.apps.cli import main
from praisonsession.recall.vectors import memory_scope
from praisonsession.recall.vectors.vault_keys import vault_key
from praisonsession.stores import record_key
from praisonsession.stores.guard import beneath

#: In every text, id and name of the erased user; in none of the kept user's.
MARK = b"q7f3a"
KEPT = b"b0b0z"


def fill(store: SessionBase, settings: dict[str, Any], user: str, mark: str, folder: Path) -> None:
    """Everything a user leaves: state, counters, logs, modules, a snapshot, a fork, an export,
    memories and knowledge in both scopes."""
    session = Session(f"talk-{mark}", user, store=store, settings=settings)
    session.save_state({f"key-{mark}": f"value {mark}", "n": 1})
    for _ in range(5):
        session.increment_state(f"count-{mark}")
    session.set_state(f"key-{mark}", f"changed {mark}")  # an old value replaced, not deleted
    session.append_messages(f"log-{mark}", [{"content": f"msg {i} {mark}"} for i in range(300)])
    runtime.run(store.set_metadata(session.session_id, user, topic=f"topic {mark}"))
    session.snapshot(f"label {mark}")
    session.fork(f"fork-{mark}").append_messages("chat", [{"content": f"forked {mark}"}])
    session.export(folder / f"{mark}.jsonl")
    (folder / f"{mark}.jsonl").unlink()
    session.add_memory(f"{user} likes quokkas {mark}", topic=f"topic-{mark}")
    note = folder / f"note-{mark}.txt"
    note.write_text(f"A note about {mark}: quokkas live on Rottnest Island.")
    session.add_knowledge(str(note))
    note.unlink()
    scoped = Session(
        f"scoped-{mark}",
        user,
        store=store,
        settings=settings,
        knowledge_config={"scope": "session"},
    )
    scoped.add_knowledge(f"Session note {mark}: the meeting is on Friday.")
    session.close()
    scoped.close()


def every_byte(root: Path, store: SessionBase, server: Path | None = None) -> bytes:
    """Every file under ``root`` (and a server's directory) and, for Redis, every key and value
    of the store."""
    found = list(_files(root))
    if server is not None:
        found += _files(server)
    if type(store).__name__ == "RedisSession":
        found += list(_redis_contents(store))
    return b"\n".join(found)


def _files(root: Path) -> Iterator[bytes]:
    """Each file's name and bytes; a running server may remove one while we look."""
    for path in root.rglob("*"):
        yield str(path).encode()
        try:
            yield path.read_bytes() if path.is_file() else b""
        except FileNotFoundError:
            continue


def stored_floats(held: bytes, values: Any, within: float = 1e-6) -> bytes | None:
    """The bytes of ``values`` as a file holds them (consecutive little-endian float32), or
    None. A server may store a vector a rounding away from the floats its API returns (Chroma
    1.5.9 with onnxruntime 1.32: up to 7.5e-9 apart), so the match is by value, and the bytes
    found are what the file holds: what must be gone after a vacuum."""
    import numpy as np

    wanted = np.asarray(values, dtype="<f4")
    for start in range(4):  # each alignment a float can start at
        floats = np.frombuffer(held, dtype="<f4", offset=start, count=(len(held) - start) // 4)
        with np.errstate(invalid="ignore"):  # bytes that are no float: NaN, never close
            firsts = np.flatnonzero(np.abs(floats[: -len(wanted)] - wanted[0]) <= within)
        for at in firsts:
            window = floats[at : at + len(wanted)]
            if np.all(np.abs(window - wanted) <= within):
                return window.tobytes()
    return None


def _redis_contents(store: Any) -> Iterator[bytes]:
    import redis

    from backends import REDIS_URL

    client = redis.Redis.from_url(REDIS_URL)
    try:
        for key in client.scan_iter(match=store.backend.key_prefix + "*", count=1000):
            yield key
            kind = client.type(key).decode()
            if kind == "string":
                yield client.get(key) or b""
            elif kind == "hash":
                yield b"".join(k + v for k, v in client.hgetall(key).items())
            elif kind == "list":
                yield b"".join(client.lrange(key, 0, -1))
            elif kind == "set":
                yield b"".join(client.smembers(key))
            elif kind == "zset":
                yield b"".join(client.zrange(key, 0, -1))
            elif kind == "none":
                continue  # gone since SCAN named it: a reply kept for retries lives a minute
            else:
                raise AssertionError(f"unexpected Redis type {kind} of {key!r}")
    finally:
        client.close()


@pytest.mark.parametrize("kind", ["json", "sqlite", "redis", "postgres"])
def test_after_erasure_no_byte_of_the_user_is_left_anywhere(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    server = None
    if kind == "redis":
        request.getfixturevalue("redis_url")
        assert redis_prefix(tmp_path)  # the store's keys are its own
    if kind == "postgres":
        request.getfixturevalue("postgres_url")
        server = request.getfixturevalue("postgres_server").dir  # its data, WAL and log
    store = make_store(kind, tmp_path)
    settings = {"data_dir": str(tmp_path / "data")}
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    fill(store, settings, "erin-" + MARK.decode(), MARK.decode(), scratch)
    fill(store, settings, "bob-" + KEPT.decode(), KEPT.decode(), scratch)
    if kind == "postgres":  # as autovacuum would: planner statistics sample the user's values
        _postgres(f'ANALYZE "{postgres_schema(tmp_path)}".ps_state', "CHECKPOINT")
    assert MARK in every_byte(tmp_path, store, server)

    report = erase_user("erin-" + MARK.decode(), store=store, settings=settings)

    assert (report.sessions, report.snapshots, report.leftovers) == (3, 1, [])
    left = every_byte(tmp_path, store, server)
    at = left.find(MARK)
    assert at < 0, f"found {left[max(0, at - 80) : at + 80]!r}"
    assert left.count(KEPT) > 300  # the other user's data is all there
    kept = Session(f"talk-{KEPT.decode()}", "bob-" + KEPT.decode(), store=store, settings=settings)
    assert len(kept.read_messages(f"log-{KEPT.decode()}")) == 300
    assert kept.search_memory("quokkas", limit=5)[0]["text"].endswith(KEPT.decode())
    kept.close()
    runtime.run(store.close())


def _index_folders(chroma: Path) -> list[Path]:
    """The folders of embedded Chroma's vector indexes (``header.bin`` beside the slots)."""
    return sorted(header.parent for header in chroma.glob("*/header.bin"))


def _unused(folder: Path) -> tuple[int, int]:
    """Where the slots no entry holds start in ``data_level0.bin`` and ``length.bin``."""
    _, _, _, count, slot = struct.unpack_from("<iQQQQ", (folder / "header.bin").read_bytes())
    return count * slot, count * 4


def test_erasure_clears_stale_memory_chroma_wrote_into_a_kept_users_index_files(
    tmp_path: Path,
) -> None:
    """Chroma writes a new index's 100 slots from memory it never cleared, which held any of
    the process's data: the erased user's bytes were found in a kept user's
    ``data_level0.bin`` now and then, on a busy machine. Here they are put there (as Chroma
    does, at once): the erasure leaves none. Our own writes clear the slots at once too."""
    store = make_store("sqlite", tmp_path)
    settings = {"data_dir": str(tmp_path / "data")}
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    fill(store, settings, "erin-" + MARK.decode(), MARK.decode(), scratch)
    fill(store, settings, "bob-" + KEPT.decode(), KEPT.decode(), scratch)
    folders = _index_folders(tmp_path / "data" / "chroma")
    assert len(folders) >= 6  # each user's memories, their history, knowledge of two scopes
    stale = b"stale heap: erin-" + MARK + b" likes quokkas " + MARK
    for folder in folders:
        data, length = _unused(folder)
        for name, start in (("data_level0.bin", data), ("length.bin", length)):
            held = (folder / name).read_bytes()
            assert start < len(held) and not held[start:].strip(b"\0")  # cleared by our writes
            with (folder / name).open("r+b") as file:
                file.seek(start)
                file.write(stale[: len(held) - start])
    assert MARK in every_byte(tmp_path, store)

    report = erase_user("erin-" + MARK.decode(), store=store, settings=settings)

    assert report.leftovers == []
    left = every_byte(tmp_path, store)
    at = left.find(MARK)
    assert at < 0, f"found {left[max(0, at - 80) : at + 80]!r}"
    kept = Session(f"talk-{KEPT.decode()}", "bob-" + KEPT.decode(), store=store, settings=settings)
    assert kept.search_memory("quokkas", limit=5)[0]["text"].endswith(KEPT.decode())
    kept.add_memory(f"bob-{KEPT.decode()} likes wombats too")  # its index still takes writes
    assert kept.search_memory("wombats", limit=1)[0]["text"].endswith("wombats too")
    kept.close()
    runtime.run(store.close())


@pytest.mark.parametrize("where", ["here", "in another process"])
def test_memory_calls_on_an_erased_session_say_it_is_gone_and_write_nothing(
    where: str, tmp_path: Path
) -> None:
    """A Session opened before its user was erased gets ``SessionNotFoundError`` from memory
    and knowledge calls too, as from state calls, never the vector store's own error, and
    none of them makes a collection again (a write after the erasure). Once the session is
    made anew, the same object's memory works again."""
    import sqlite3
    import sys

    store = make_store("sqlite", tmp_path)
    data = tmp_path / "data"
    settings = {"data_dir": str(data)}
    user = "erin-" + MARK.decode()
    talk = f"talk-{MARK.decode()}"
    session = Session(talk, user, store=store, settings=settings)
    session.save_state({"n": 1})
    session.add_memory(f"{user} likes quokkas")
    session.add_knowledge(f"A note about {MARK.decode()}: the meeting is on Friday.")
    assert session.search_memory("quokkas")[0]["text"].endswith("quokkas")
    if where == "here":
        erase_user(user, store=store, settings=settings)
    else:
        erase = (
            "from praisonsession import erase_user; "
            f"erase_user({user!r}, {str(store.url)!r}, settings={settings!r})"
        )
        subprocess.run([sys.executable, "-c", erase], check=True, timeout=120)

    calls = {
        "restore_state": session.restore_state,
        "search_memory": lambda: session.search_memory("quokkas"),
        "add_memory": lambda: session.add_memory(f"more quokkas {MARK.decode()}"),
        "add_memories": lambda: session.add_memories([f"a {MARK.decode()}", "b"]),
        "list_memories": session.list_memories,
        "clear_memory": session.clear_memory,
        "search_knowledge": lambda: session.search_knowledge("meeting"),
        "add_knowledge": lambda: session.add_knowledge(f"Another note {MARK.decode()}."),
    }
    for name, call in calls.items():
        with pytest.raises(SessionNotFoundError):
            call()
        assert runtime.run(store.get_info(talk, user)) is None, name  # not made again
    chroma = sqlite3.connect(data / "chroma" / "chroma.sqlite3")
    try:
        assert chroma.execute("SELECT name FROM collections").fetchall() == []
        assert chroma.execute("SELECT count(*) FROM embeddings_queue").fetchone() == (0,)
    finally:
        chroma.close()
    assert MARK not in every_byte(data, store)

    anew = Session(talk, user, store=store, settings=settings)  # the session made anew:
    anew.save_state({"n": 2})  # the old object's memory opens afresh
    anew.close()
    session.add_memory(f"{user} likes wombats")
    assert [hit["text"] for hit in session.search_memory("wombats")] == [f"{user} likes wombats"]
    session.close()
    runtime.run(store.close())


@pytest.fixture
def every_reply_lost_once(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """What a loaded machine does to some writes, done to all of them, so that the test is
    deterministic: Redis runs the write, its reply is lost (a timeout), the client retries with
    the same op token and gets the reply the server kept. Returns ``lose(store)`` to apply it
    to a Redis store, then the names of the scripts whose reply was lost."""
    import redis

    lost: list[str] = []

    def lose(store: SessionBase) -> list[str]:
        backend = beneath(store.backend)  # the Redis backend under the store's key guard
        scripts = backend._scripts.values()  # type: ignore[attr-defined]
        by_text = {s.sha: s for s in scripts} | {s.source: s for s in scripts}

        def first_try(keys_and_args: tuple[Any, ...], numkeys: int) -> str | None:
            """The script's name when this is a write's first attempt (ARGV 5 is "0"); the
            script is named by its SHA1 (EVALSHA) or given whole (EVAL, on a first run)."""
            script = by_text.get(keys_and_args[0])
            args = keys_and_args[2 + numkeys :]
            if script is None or not script.writes or args[4] != "0":
                return None
            return script.name

        inline = backend._inline  # type: ignore[attr-defined]
        real_command = inline._command

        def command(*args: Any) -> Any:
            reply = real_command(*args)
            name = first_try(args[1:], int(args[2])) if args[0] in ("EVAL", "EVALSHA") else None
            if name is not None:
                lost.append(name)
                raise redis.exceptions.ConnectionError("reply lost (simulated)")
            return reply

        monkeypatch.setattr(inline, "_command", command)
        real_client = backend._client  # type: ignore[attr-defined]

        async def client() -> Any:
            found = await real_client()
            if found is inline:
                return found

            class LosesReplies:
                def __getattr__(self, name: str) -> Any:
                    return getattr(found, name)

                async def evalsha(self, *args: Any) -> Any:
                    return self._lose(await found.evalsha(*args), args)

                async def eval(self, *args: Any) -> Any:
                    return self._lose(await found.eval(*args), args)

                def _lose(self, reply: Any, args: tuple[Any, ...]) -> Any:
                    name = first_try(args, int(args[1]))
                    if name is not None:
                        lost.append(name)
                        raise redis.exceptions.ConnectionError("reply lost (simulated)")
                    return reply

            return LosesReplies()

        monkeypatch.setattr(backend, "_client", client)
        real_lane = backend._lane  # type: ignore[attr-defined]

        async def lane() -> Any:
            found = await real_lane()

            class LosesReplies:  # the first attempt on a loop: the lane's own connection
                async def run(self, script: Any, keys: list[str], args: list[Any]) -> Any:
                    reply = await found.run(script, keys, args)
                    if script.writes and args[4] == "0":
                        lost.append(script.name)
                        raise redis.exceptions.ConnectionError("reply lost (simulated)")
                    return reply

            return LosesReplies()

        monkeypatch.setattr(backend, "_lane", lane)
        return lost

    yield lose


def test_erasure_leaves_no_reply_kept_for_a_retried_write_of_the_user(
    redis_url: str, tmp_path: Path, every_reply_lost_once: Any
) -> None:
    """#11 of issue 38: Redis keeps a write's reply for a minute under its op token, so that
    a retry after a lost reply is answered without writing twice. Erasure deleted only the
    replies that name the user; one that holds their data without naming them (the messages a
    truncation removed, as pop_item does) stayed: "msg 298" after erase_user. Every reply is
    lost here and retried, and the user pops their last two messages."""
    store = make_store("redis", tmp_path)
    lost = every_reply_lost_once(store)
    settings = {"data_dir": str(tmp_path / "data")}
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    user = "erin-" + MARK.decode()
    fill(store, settings, user, MARK.decode(), scratch)
    fill(store, settings, "bob-" + KEPT.decode(), KEPT.decode(), scratch)
    key = record_key(f"talk-{MARK.decode()}", user)
    popped = runtime.run(
        store.backend.truncate_log(key, path=f"log-{MARK.decode()}", length=298, expected=300)
    )
    assert [m["content"] for m in popped] == [f"msg {i} {MARK.decode()}" for i in (298, 299)]
    # a plain session is truncated by truncate_tail.lua, keeping its reply as truncate.lua does
    scripts = {"truncate" if name == "truncate_tail" else name for name in lost}
    assert {"create", "patch", "increment", "append", "copy", "truncate"} <= scripts, lost

    report = erase_user(user, store=store, settings=settings)

    assert (report.sessions, report.snapshots, report.leftovers) == (3, 1, [])
    assert "delete" in lost  # the erasure's own writes went through retries too
    left = every_byte(tmp_path, store)
    at = left.find(MARK)
    assert at < 0, f"found {left[max(0, at - 80) : at + 80]!r}"
    assert left.count(KEPT) > 300  # the other user's replies and data stay
    runtime.run(store.close())


@pytest.mark.parametrize("encrypted", [False, True], ids=["plain", "encrypted"])
@pytest.mark.parametrize("kind", ["json", "sqlite", "redis", "postgres"])
def test_a_fork_to_another_user_keeps_its_data_but_not_the_erased_users_ids(
    kind: str, encrypted: bool, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if kind in backends.SERVERS:
        request.getfixturevalue(backends.SERVERS[kind])
    store = make_store(kind, tmp_path)
    if encrypted:  # the fork is sealed afresh under a key of its own user's, not the guest's
        store = EncryptedStore(store, backends.ENCRYPTION_KEY)
    guest_id = "g5t1x"  # a mark of its own: the PostgreSQL server's files are scanned for MARK
    guest = Session(f"visit-{guest_id}", f"guest-{guest_id}", store=store)
    guest.set_state("topic", "birds")
    guest.append_messages("chat", [{"role": "user", "content": "keep this"}])
    guest.append_messages("chat", [{"role": "user", "content": "and not this"}])
    account = guest.fork("kept", user_id="account", at_message=("chat", 1))
    erase_user(f"guest-{guest_id}", store=store)
    assert account.read_messages("chat") == [{"role": "user", "content": "keep this"}]
    assert account.get_state("topic") == "birds"
    info = account.get_info()
    assert info is not None and guest_id not in repr(info.metadata)
    assert [node.info.session_id for node in account.tree()] == ["kept"]  # a root now
    assert [i.session_id for i in account.list_sessions()] == ["kept"]  # no staging left
    if encrypted:
        sealed = store.backend  # the origin its key derives from: the account's own
        origin = runtime.run(sealed._origin(record_key("kept", "account")))  # type: ignore[attr-defined]
        assert origin[0] == "account" and guest_id not in repr(origin)
        account.append_messages("chat", [{"role": "user", "content": "later"}])
        assert len(account.read_messages("chat")) == 2
    if kind in ("json", "sqlite", "redis"):
        left = every_byte(tmp_path, store)
        at = left.find(guest_id.encode())
        assert at < 0, f"found {left[max(0, at - 80) : at + 80]!r}"
    runtime.run(store.close())


@pytest.mark.parametrize("kind", ["json", "sqlite", "redis", "postgres"])
def test_erasure_without_the_key_removes_an_encrypted_users_sessions_and_says_what_it_left(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """An administrator without the key can still erase: sessions by id, snapshots by the
    digest their names carry; a sealed parent link it cannot read is named in the report, and
    erasing again with the key unlinks it."""
    if kind in backends.SERVERS:
        request.getfixturevalue(backends.SERVERS[kind])
    plain = make_store(kind, tmp_path)
    sealed = EncryptedStore(make_store(kind, tmp_path), backends.ENCRYPTION_KEY)
    guest = Session("visit", "guest", store=sealed)
    guest.append_messages("chat", [{"role": "user", "content": "keep this"}])
    guest.snapshot("before")
    account = guest.fork("kept", user_id="account")

    report = erase_user("guest", store=plain)
    assert (report.sessions, report.snapshots) == (1, 1)
    assert len(report.leftovers) == 1 and "sealed parent link" in report.leftovers[0]
    assert runtime.run(plain.backend.read_record(record_key("visit", "guest"))) is None
    assert account.read_messages("chat") == [{"role": "user", "content": "keep this"}]

    again = erase_user("guest", store=sealed)
    assert (again.sessions, again.snapshots, again.leftovers) == (0, 0, [])
    info = account.get_info()
    assert info is not None and "guest" not in repr(info.metadata)
    account.close()
    runtime.run(plain.close())
    runtime.run(sealed.close())


def _postgres(*statements: str, url: str | None = None) -> None:
    import psycopg

    with psycopg.connect(url or backends.POSTGRES_URL, autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)


def test_postgres_without_privileges_erases_and_says_what_it_could_not_scrub(
    tmp_path: Path, request: pytest.FixtureRequest, caplog: pytest.LogCaptureFixture
) -> None:
    """A user that owns its tables but is no superuser: the rows go and the tables are
    rewritten, but the WAL cannot be switched nor checkpointed, nor pg_statistic rewritten.
    The report and the log say so, one finding each, instead of claiming a clean erasure."""
    admin = request.getfixturevalue("postgres_url")
    role = postgres_schema(tmp_path) + "_r"
    _postgres(f"CREATE ROLE {role} LOGIN", f"GRANT CREATE ON DATABASE postgres TO {role}")
    login = admin.replace("postgres@", f"{role}@", 1)
    url = f"{login}?schema={role}"
    settings = {"data_dir": str(tmp_path / "data")}
    for user in ("erin", "bob"):
        session = Session("talk", user, store=url, settings=settings)
        session.append_messages("chat", [{"content": f"hello from {user}"}])
        session.close()
    _postgres("ANALYZE", url=login)  # its tables: statistics hold the users' values

    with caplog.at_level("WARNING", logger="praisonsession"):
        report = erase_user("erin", store=url, settings=settings)

    assert (report.sessions, report.session_ids) == (1, ["talk"])
    found = "\n".join(report.leftovers)
    assert len(report.leftovers) == 3, found
    assert "pg_catalog.pg_statistic was not rewritten" in report.leftovers[0]
    assert "pg_switch_wal() was refused" in report.leftovers[1]
    assert "CHECKPOINT was refused" in report.leftovers[2]
    assert "pg_checkpoint" in report.leftovers[2]
    logged = [r.getMessage() for r in caplog.records if "erasure" in r.getMessage()]
    assert len(logged) == 3 and all(role in line for line in logged)
    assert Session("talk", "erin", store=url).read_messages("chat") == []
    assert Session("talk", "bob", store=url).read_messages("chat")[0]["content"].endswith("bob")
    said = CliRunner().invoke(main, ["erase-user", "bob", "--store", url, "--yes"])
    assert said.exit_code == 0 and said.stdout.startswith("Erased user 'bob': 1 session")
    assert said.stderr.count("Not scrubbed: ") == 3
    assert "pg_checkpoint" in said.stderr


def test_postgres_erasure_under_an_open_snapshot_says_so_and_a_second_one_scrubs(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A transaction that took its snapshot before the erasure may still read the deleted
    rows, so no rewrite can drop them yet: the report says which tables keep them; erasing
    again once that transaction ends leaves nothing."""
    import psycopg

    request.getfixturevalue("postgres_url")
    server = request.getfixturevalue("postgres_server").dir
    store = make_store("postgres", tmp_path)
    session = Session("talk", "erin-" + MARK.decode(), store=store)
    session.append_messages("chat", [{"content": f"msg {i} {MARK.decode()}"} for i in range(50)])
    with psycopg.connect(backends.POSTGRES_URL) as reader:  # a snapshot, no lock on our tables
        reader.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        reader.execute("SELECT 1")
        report = erase_user("erin-" + MARK.decode(), store=store)
        assert report.sessions == 1
        kept = [finding for finding in report.leftovers if "cannot be removed yet" in finding]
        assert any(".ps_messages: " in finding for finding in kept), report.leftovers
    assert erase_user("erin-" + MARK.decode(), store=store).leftovers == []
    assert MARK not in every_byte(tmp_path, store, server)
    runtime.run(store.close())


@pytest.mark.parametrize("snapshot_ends", ["during the statistics' pause", "never"])
def test_postgres_scrub_tries_again_while_a_snapshot_keeps_the_rows(
    snapshot_ends: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every table the scrub rewrites, the planner's statistics as the store's own, is
    rewritten again after growing pauses while only another transaction's snapshot kept its
    deleted rows, within the scrub's patience (seconds in all). Here the snapshot outlives
    every try of the table, which is reported with the rows it kept; ending during the pause
    before the statistics' second try, it leaves them clean; never ending, the statistics are
    tried until the patience is spent, and reported too. (In a database of its own, with
    autovacuum off for its table: the server's other databases' snapshots, the other tests'
    and autovacuum's, keep no row of it.)"""
    import types

    import psycopg

    from praisonsession.stores.backends.postgres import scrub

    server = request.getfixturevalue("postgres_url")
    name = postgres_schema(tmp_path)
    _postgres(f'CREATE DATABASE "{name}"')
    url = server.rsplit("/", 1)[0] + f"/{name}"
    ends = len(scrub._PAUSES) + 1 if snapshot_ends != "never" else None
    try:
        _postgres(
            "CREATE TABLE t (n int) WITH (autovacuum_enabled = false)",
            "INSERT INTO t SELECT n FROM generate_series(1, 50) n",
            "ANALYZE t",  # statistics the scrub replaces: their old rows are dead then
            url=url,
        )
        with psycopg.connect(url) as reader:
            reader.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            reader.execute("SELECT 1")  # its snapshot still sees every row changed below
            _postgres("DELETE FROM t WHERE n > 10", url=url)
            paused: list[float] = []

            def pause(seconds: float) -> None:
                paused.append(seconds)
                if len(paused) == ends:
                    reader.rollback()

            monkeypatch.setattr(scrub, "time", types.SimpleNamespace(sleep=pause))
            left = scrub.scrub_after_erasure(url, 10, "public", ["t"])
        assert paused[: len(scrub._PAUSES)] == list(scrub._PAUSES)  # the table's, all of them
        assert left[0].startswith("public.t: 40 erased row versions cannot be removed yet")
        if ends is not None:
            assert paused == [*scrub._PAUSES, scrub._PAUSES[0]]
            assert len(left) == 1, left
        else:
            assert sum(paused) == pytest.approx(scrub._PATIENCE)  # and no longer
            assert len(left) == 2, left
            assert left[1].startswith("pg_catalog.pg_statistic: ")
            assert "cannot be removed yet" in left[1]
    finally:
        _postgres(f'DROP DATABASE "{name}" WITH (FORCE)')


@pytest.mark.slow
def test_a_chroma_server_keeps_nothing_readable_of_an_erased_user(tmp_path: Path) -> None:
    """A Chroma server keeps deleted entries in free space of its files, out of reach of its
    API. So it only ever gets the user's texts, ids and names sealed under the user's key,
    kept in the session store and destroyed by the erasure: after it, neither the server's
    files nor the store hold a readable byte of the user, nor the key. The vectors stay in
    the server's free space until its operator vacuums: the report says so, and the vacuum
    removes them."""
    import chromadb

    server = ChromaServer().start()
    try:
        store = make_store("sqlite", tmp_path)
        settings = {"data_dir": str(tmp_path / "data"), "vector_store_url": server.url}
        scratch = tmp_path / "scratch"
        scratch.mkdir()
        erin, bob = "erin-" + MARK.decode(), "bob-" + KEPT.decode()
        fill(store, settings, erin, MARK.decode(), scratch)
        fill(store, settings, bob, KEPT.decode(), scratch)
        key = base64.urlsafe_b64encode(runtime.run(vault_key(store.backend, erin)))
        assert key in every_byte(tmp_path, store)  # the store keeps the user's key
        talk = Session(f"talk-{MARK.decode()}", erin, store=store, settings=settings)
        memory_id = talk.search_memory("quokkas", limit=1)[0]["id"].encode()
        talk.close()
        held = b"".join(_files(server.path))
        assert held.count(b"psenc1:") >= 8 and MARK not in held and KEPT not in held
        assert memory_id not in held  # a digest of the text: stored under a keyed token
        client = chromadb.HttpClient(host="127.0.0.1", port=server.port)
        memories = client.get_collection(memory_scope("praisonsession", erin).collection)
        vector = memories.get(include=["embeddings"])["embeddings"][0]
        signature = stored_floats(held, vector[:8])  # the bytes the server wrote for them
        assert signature is not None

        report = erase_user(erin, store=store, settings=settings)

        assert (report.sessions, report.vector_entries) == (3, 4)
        assert len(report.leftovers) == 1
        assert "chroma vacuum --path <its data directory> --force" in report.leftovers[0]
        left = every_byte(tmp_path, store) + b"".join(_files(server.path))
        assert MARK not in left and key not in left
        kept = Session(f"talk-{KEPT.decode()}", bob, store=store, settings=settings)
        topic = {"topic": f"topic-{KEPT.decode()}"}  # equality filters work on keyed tokens
        found = kept.search_memory("quokkas", limit=5, where=topic)
        assert [hit["metadata"]["topic"] for hit in found] == [topic["topic"]]
        assert found[0]["text"] == f"{bob} likes quokkas {KEPT.decode()}"
        kept.close()
        runtime.run(store.close())

        server.halt()  # the operator's vacuum, on the stopped server's directory
        subprocess.run(
            [*chroma_command(), "vacuum", "--path", str(server.path), "--force"],
            check=True,
            capture_output=True,
            timeout=120,
        )
        vacuumed = b"".join(_files(server.path))
        assert signature not in vacuumed and stored_floats(vacuumed, vector[:8]) is None
    finally:
        server.stop()


def test_a_vaulted_collection_still_reaches_entries_stored_before_the_vault(
    chroma_url: str,
) -> None:
    """Entries a Chroma server got before its collections were sealed stay readable,
    filterable, replaceable (not duplicated) and deletable; new ones go sealed."""
    import os
    import uuid

    from praisonsession.recall import default_embedder
    from praisonsession.recall.vectors import Vault, VectorIndex, chroma_client

    client = chroma_client(chroma_url)
    name = f"t{uuid.uuid4().hex}_legacy"
    embedder = default_embedder("minilm")
    before = VectorIndex(client, name, embedder, owner="ann")
    before.add(["a", "b"], ["Ann likes tea", "Ann likes jazz"], [{"t": "drink"}, {"t": "music"}])
    vaulted = VectorIndex(client, name, embedder, owner="ann", vault=Vault(os.urandom(32)))
    try:
        assert [hit.id for hit in vaulted.get(where={"t": "drink"})] == ["a"]
        assert vaulted.existing(["a", "b", "c"]) == {"a", "b"}
        vaulted.add(["a"], ["Ann likes green tea"], [{"t": "drink"}])
        assert vaulted.count() == 2  # replaced, not duplicated
        found = vaulted.get(ids=["a"])
        assert [(hit.id, hit.text, hit.metadata) for hit in found] == [
            ("a", "Ann likes green tea", {"t": "drink"})
        ]
        raw = client.get_collection(name).get(include=["documents"])
        assert "Ann likes jazz" in raw["documents"]  # as it was stored
        assert [d for d in raw["documents"] if "green" in d] == []  # the new one sealed
        vaulted.delete_ids(["b"])
        assert vaulted.count() == 1
    finally:
        client.delete_collection(name)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["sqlite", "json", "redis", "postgres"])
def test_erasure_leaves_no_fragment_at_scale(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """2,000 sessions of the user, each with a snapshot, between another user's: the pages a
    database split and merged while it grew, its logs and its server's files keep no copy of
    the user's messages after erasure, and the report says what a byte scan finds."""
    from praisonsession.stores.branches import Branches

    server = None
    if kind in backends.SERVERS:
        request.getfixturevalue(backends.SERVERS[kind])
    if kind == "postgres":
        server = request.getfixturevalue("postgres_server").dir  # its data, WAL and log
    store = make_store(kind, tmp_path)
    branches = Branches(store.backend)

    async def grow() -> None:
        for n in range(2000):
            for user, mark in (("erin-" + MARK.decode(), MARK), ("bob-" + KEPT.decode(), KEPT)):
                if user.startswith("bob") and n % 4:
                    continue
                text = f"message {n} of {mark.decode()} " + "x" * (40 + n % 200)
                await store.append_messages(f"s{n}", user, "chat", [{"content": text}] * 2)
                await store.patch_state(f"s{n}", user, {"note": f"{mark.decode()} {n}"})
                if user.startswith("erin"):
                    await branches.snapshot(f"s{n}", user, f"label {mark.decode()}")

    runtime.run(grow())
    report = erase_user("erin-" + MARK.decode(), store=store)
    assert (report.sessions, report.snapshots) == (2000, 2000)
    left = every_byte(tmp_path, store, server)
    at = left.find(MARK)
    assert report.leftovers == ([] if at < 0 else report.leftovers)  # what it says, a scan finds
    assert at < 0, f"found {left[max(0, at - 80) : at + 80]!r}"
    assert left.count(KEPT) >= 500 * 2
    kept = runtime.run(store.read_messages("s4", "bob-" + KEPT.decode(), "chat"))
    assert kept[0]["content"].startswith(f"message 4 of {KEPT.decode()}")
    runtime.run(store.close())
