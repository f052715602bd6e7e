"""``durability``: what an acknowledged write survives, and how each backend is told.

"process" (the default) survives a crash of the process; "power" survives a power loss too.
Each backend's own mechanism is observed directly: SQLite's ``PRAGMA synchronous``, the JSON
store's ``fsync`` calls, the Redis server's ``appendonly`` / ``appendfsync``.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from backends import redis_prefix
from praisonsession import (
    InvalidValueError,
    JSONSession,
    RedisSession,
    Session,
    SqliteSession,
    open_store,
)
from praisonsession.stores.backends.sqlite.backend import SqliteBackend
from process_workers import worker_command
from redis_server import RedisServer

NORMAL, FULL = 1, 2  # what PRAGMA synchronous reads back


def synchronous(store: SqliteSession) -> int:
    return store.backend._connection().execute("PRAGMA synchronous").fetchone()[0]


# -- SQLite: synchronous ---------------------------------------------------------------------


def test_sqlite_process_is_synchronous_normal_and_power_is_full(tmp_path: Path, run) -> None:
    default = SqliteSession(tmp_path / "default.db")
    process = SqliteSession(tmp_path / "process.db", durability="process")
    power = SqliteSession(tmp_path / "power.db", durability="power")
    assert (default.backend.durability, synchronous(default)) == ("process", NORMAL)
    assert (process.backend.durability, synchronous(process)) == ("process", NORMAL)
    assert (power.backend.durability, synchronous(power)) == ("power", FULL)
    for store in (default, process, power):
        assert run(store.increment("s", "u", "n")) == 1  # and they work
        run(store.close())


def test_sqlite_synchronous_still_works_and_wins_over_durability(tmp_path: Path, run) -> None:
    full = SqliteSession(tmp_path / "a.db", synchronous="FULL")
    assert (full.backend.durability, synchronous(full)) == ("power", FULL)
    both = SqliteSession(tmp_path / "b.db", synchronous="normal", durability="power")
    assert (both.backend.durability, synchronous(both)) == ("process", NORMAL)
    for store in (full, both):
        run(store.close())
    with pytest.raises(InvalidValueError, match="synchronous"):
        SqliteSession(tmp_path / "c.db", synchronous="SOMETIMES")


@pytest.mark.parametrize("way", ["at once", "the full way"])
def test_at_power_a_reads_slide_of_its_ttl_commits_without_an_fsync_and_a_write_with_one(
    tmp_path: Path, run, frozen_clock, way: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read acknowledges no write: the new expiry a sliding TTL gets from it commits at
    ``synchronous=NORMAL`` (no fsync of its own), the connection back at FULL at once, so a
    read of a session with a TTL costs no disk flush; so does the slide the full way makes
    (a transaction of its own, when the file is busy). A write still commits at FULL."""
    if way == "the full way":
        monkeypatch.setattr(SqliteBackend, "_slid_at_once", lambda *_: False)
    store = SqliteSession(tmp_path / "ttl.db", durability="power", default_ttl=60)
    run(store.patch_state("s", "u", {"a": 1}))
    conn = store.backend._connection()  # this thread's, which the calls below run on
    frozen_clock.advance(40)
    seen: list[str] = []
    conn.set_trace_callback(seen.append)
    try:
        assert run(store.get_state("s", "u"), inline=True) == {"a": 1}
        read = list(seen)
        seen.clear()
        run(store.patch_state("s", "u", {"b": 2}), inline=True)
        written = list(seen)
    finally:
        conn.set_trace_callback(None)
    unflushed, flushed = "PRAGMA synchronous=NORMAL", "PRAGMA synchronous=FULL"
    assert read.count(unflushed) == read.count(flushed) == 1
    slide = read[read.index(unflushed) + 1 : read.index(flushed)]
    assert any(statement.startswith("UPDATE ps_state SET expires_at") for statement in slide)
    if way == "the full way":
        assert slide[0] == "BEGIN IMMEDIATE" and slide[-1] == "COMMIT"
    assert not any(statement.startswith("PRAGMA synchronous") for statement in written)
    assert synchronous(store) == FULL
    assert run(store.get_info("s", "u")).expires_at == pytest.approx(frozen_clock() + 60, abs=1)
    frozen_clock.advance(40)  # 80 s after the write, 40 after the read that slid the TTL
    assert run(store.get_state("s", "u")) == {"a": 1, "b": 2}
    run(store.close())


def test_a_reads_slide_outlives_the_process_that_made_it(tmp_path: Path, run) -> None:
    """The slide is committed, only not flushed at once: it is in the file for every other
    process, even when the reader is killed right after its read, without a close."""
    url = f"sqlite://{tmp_path / 'slid.db'}?durability=power"
    store = open_store(url, default_ttl=600)
    run(store.patch_state("s", "u", {"a": 1}))
    before = run(store.get_info("s", "u")).expires_at
    time.sleep(0.05)  # the read comes later: its slide moves the expiry
    reader = subprocess.run(
        worker_command("read-and-die", url, "s"), capture_output=True, text=True, timeout=60
    )
    assert reader.returncode == -signal.SIGKILL, reader.stderr
    assert json.loads(reader.stdout) == {"a": 1}
    assert run(store.get_info("s", "u")).expires_at >= before + 0.05
    run(store.close())


@pytest.mark.parametrize("bad", ["Power", "disk", "", None, 1])
def test_a_durability_that_is_not_one_of_the_two_is_refused_naming_both(
    tmp_path: Path, bad: object
) -> None:
    for make in (
        lambda: JSONSession(tmp_path / "j", durability=bad),
        lambda: RedisSession(durability=bad),
    ):
        with pytest.raises(InvalidValueError, match=r"'process'.*'power'"):
            make()
    if bad is not None:  # None means "not given" to SqliteSession, whose default is process
        with pytest.raises(InvalidValueError, match=r"'process'.*'power'"):
            SqliteSession(tmp_path / "s.db", durability=bad)


def test_session_takes_the_durability_of_its_settings_and_a_urls_own_wins(
    tmp_path: Path,
) -> None:
    url = f"sqlite://{tmp_path}/s.db"
    with Session(store=url, settings={"durability": "power"}) as session:
        assert (session.store.backend.durability, synchronous(session.store)) == ("power", FULL)
    with Session(store=url + "?durability=power") as session:
        assert synchronous(session.store) == FULL
    with Session(store=url + "?durability=process", settings={"durability": "power"}) as session:
        assert synchronous(session.store) == NORMAL
    with Session(settings={"durability": "power", "data_dir": str(tmp_path / "d")}) as session:
        assert synchronous(session.store) == FULL  # the default store too
        session.set_state("a", 1)


def test_file_store_urls_take_their_options_and_refuse_unknown_ones(tmp_path: Path, run) -> None:
    store = open_store(f"sqlite://{tmp_path}/s.db?durability=power&busy_timeout=2.5")
    assert (store.backend.durability, store.backend.busy_timeout) == ("power", 2.5)
    run(store.close())
    store = open_store(f"json://{tmp_path}/j?durability=power&lock_timeout=3")
    assert (store.backend.durability, store.backend.lock_timeout) == ("power", 3.0)
    with pytest.raises(InvalidValueError, match="'fsync' is not an option"):
        open_store(f"sqlite://{tmp_path}/s.db?fsync=1")
    with pytest.raises(InvalidValueError, match="busy_timeout='soon' is not valid"):
        open_store(f"sqlite://{tmp_path}/s.db?busy_timeout=soon")
    with pytest.raises(InvalidValueError, match="durability"):
        open_store(f"json://{tmp_path}/j?durability=always")


# -- JSON: fsync ------------------------------------------------------------------------------


@pytest.fixture
def fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every os.fsync call made while the test runs (the call still happens)."""
    calls: list[int] = []
    real = os.fsync

    def counting(fd: int) -> None:
        calls.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fsync", counting)
    return calls


def test_json_at_process_writes_without_fsync_and_at_power_fsyncs_file_and_directory(
    tmp_path: Path, fsyncs: list[int]
) -> None:
    with Session("s", store=f"json://{tmp_path}/p?durability=process") as session:
        fsyncs.clear()
        session.set_state("a", 1)
        session.append_messages("log", [{"role": "user", "content": "hi"}])
        session.append_messages("log", [{"role": "user", "content": "again"}])
        assert fsyncs == []
        assert session.read_messages("log")[1]["content"] == "again"
    with Session("s", store=f"json://{tmp_path}/f", settings={"durability": "power"}) as session:
        fsyncs.clear()
        session.set_state("a", 1)
        assert len(fsyncs) == 2  # the new document, then its directory
        fsyncs.clear()
        session.append_messages("log", [{"role": "user", "content": "hi"}])  # a new log file
        assert len(fsyncs) == 4  # log file + logs directory, document + its directory
        fsyncs.clear()
        session.append_messages("log", [{"role": "user", "content": "again"}])  # appended
        assert len(fsyncs) == 3  # the log file, document + its directory
        assert session.get_state("a") == 1


def test_a_session_written_at_either_durability_reads_back_at_the_other(tmp_path: Path) -> None:
    with Session("s", store=f"json://{tmp_path}/j?durability=power") as session:
        session.save_state({"a": 1, "b": [1.5, None]})
    with Session("s", store=f"json://{tmp_path}/j?durability=process") as session:
        session.increment_state("a")
        assert session.restore_state() == {"a": 2, "b": [1.5, None]}


# -- Redis: the server decides ----------------------------------------------------------------


def test_redis_reports_what_its_server_is_configured_to_survive(
    redis_url: str, tmp_path: Path, run
) -> None:
    store = open_store(f"{redis_url}?key_prefix={redis_prefix(tmp_path)}")
    assert run(store.backend.server_durability()) == {  # the test server keeps nothing on disk
        "appendonly": "no",
        "appendfsync": "everysec",
        "durability": "memory",
    }
    run(store.close())
    with RedisServer(durable=True) as server:
        store = open_store(server.url)
        found = run(store.backend.server_durability())
        assert (found["appendonly"], found["appendfsync"], found["durability"]) == (
            "yes",
            "always",
            "power",
        )
        run(store.close())


def test_redis_at_power_warns_once_when_the_server_would_not_survive_a_power_loss(
    redis_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"{redis_url}?key_prefix={redis_prefix(tmp_path)}&durability=power"
    with (
        caplog.at_level(logging.WARNING, logger="praisonsession"),
        Session("s", store=url) as session,
    ):
        assert session.store.backend.durability == "power"
        session.set_state("a", 1)
        session.increment_state("n")
    warnings = [r.getMessage() for r in caplog.records if "appendfsync" in r.getMessage()]
    assert len(warnings) == 1
    assert "appendfsync always" in warnings[0] and "durability='power'" in warnings[0]
    caplog.clear()
    with (
        caplog.at_level(logging.WARNING, logger="praisonsession"),
        Session("s", store=url.replace("power", "process")) as session,
    ):
        session.set_state("a", 2)
    assert not [r for r in caplog.records if "appendfsync" in r.getMessage()]
