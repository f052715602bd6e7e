"""``StoreBackend.stamped`` / ``unchanged_since``: what a cache of reads may trust.

A stamp certifies that nothing in the store changed since an operation read or wrote, and
that the record can neither expire nor slide by time. On SQLite it is the connection's
``data_version`` (moved by another connection's commit, of any process) and its
``total_changes`` (moved by every store of this process sharing the connection). Real files,
real threads, real processes: each way a record can change must void the stamp.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from backends import ENCRYPTION_KEY
from praisonsession import open_store
from praisonsession._internal import runtime
from praisonsession.stores import Key, LogWrite, StoreBackend
from praisonsession.stores.backend import Stamped
from praisonsession.stores.wrappers.encrypted import EncryptedStore

KEY = Key("alice", "chat")
#: The store's calls run on this thread (as the sync facade runs them): a stamp is certified
#: on the connection of the thread that took it.
run = partial(runtime.run, inline=True)
LOG = "notes"


def stamped_read(backend: StoreBackend, key: Key = KEY) -> Stamped:
    return run(backend.stamped(key, lambda: backend.read_log(key, path=LOG, start=0, stop=None)))


def append(backend: StoreBackend, text: str, key: Key = KEY) -> int:
    return run(
        backend.append_log(key, write=LogWrite(LOG, [{"role": "user", "content": text}], -1))
    )


def sqlite_backend(path: Path, **settings: Any) -> StoreBackend:
    return open_store(f"sqlite://{path}", **settings).backend


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "stamps.db"


def test_a_read_is_stamped_and_the_stamp_holds_while_nothing_changes(path: Path) -> None:
    backend = sqlite_backend(path)
    append(backend, "one")
    found = stamped_read(backend)
    assert [m["content"] for m in found.value] == ["one"]
    assert found.stamp is not None
    assert backend.unchanged_since(found.stamp)
    stamped_read(backend, Key("alice", "other"))  # reads change nothing
    assert backend.unchanged_since(found.stamp)
    assert stamped_read(backend).stamp == found.stamp  # one state, equal stamps


def test_a_write_of_this_store_or_another_store_of_the_process_voids_it(path: Path) -> None:
    backend, other = sqlite_backend(path), sqlite_backend(path)
    append(backend, "one")
    stamp = stamped_read(backend).stamp
    append(backend, "two")
    assert not backend.unchanged_since(stamp)
    stamp = stamped_read(backend).stamp
    append(other, "elsewhere", Key("bob", "another"))  # another record, another store object
    assert not backend.unchanged_since(stamp)


def test_a_commit_of_another_thread_or_process_voids_it(path: Path) -> None:
    backend = sqlite_backend(path)
    append(backend, "one")
    stamp = stamped_read(backend).stamp
    done = threading.Thread(target=append, args=(backend, "from a thread"))
    done.start()
    done.join()
    assert not backend.unchanged_since(stamp)

    stamp = stamped_read(backend).stamp
    code = (
        "import sys; from praisonsession import open_store; "
        "from praisonsession._internal import runtime; "
        "from praisonsession.stores import Key, LogWrite; "
        "b = open_store('sqlite://' + sys.argv[1]).backend; "
        "runtime.run(b.append_log(Key('zed', 'z'), write=LogWrite('n', [{'x': 1}], -1)))"
    )
    subprocess.run([sys.executable, "-c", code, str(path)], check=True, timeout=120)
    assert not backend.unchanged_since(stamp)


def test_a_stamp_is_certified_only_on_the_connection_it_was_taken_on(path: Path) -> None:
    backend = sqlite_backend(path)
    append(backend, "one")
    stamp = stamped_read(backend).stamp
    seen: list[bool] = []
    other = threading.Thread(target=lambda: seen.append(backend.unchanged_since(stamp)))
    other.start()
    other.join()
    assert seen == [False]
    assert backend.unchanged_since(stamp)
    run(backend.close())
    assert not backend.unchanged_since(stamp)  # reopened: another connection


def test_a_write_is_stamped_after_its_statements_with_the_documents_asked_for(
    path: Path,
) -> None:
    backend = sqlite_backend(path)
    run(backend.write_modules(KEY, documents={"d": {"n": 1}}, writes=[]))
    done = run(
        backend.stamped(
            KEY,
            lambda: backend.append_log(KEY, write=LogWrite(LOG, [{"x": 1}], -1)),
            ["d", "missing"],
        )
    )
    assert done.value == 1
    assert done.documents == {"d": {"n": 1}}
    assert backend.unchanged_since(done.stamp)  # taken after its own statements


def test_a_stamped_read_of_a_missing_record_reads_its_row_once_then_the_full_way(
    path: Path,
) -> None:
    """The stamp's statement reads the record's row as the liveness check does: when it finds
    none, the read goes the full way at once (which tells missing from damaged), not through
    the liveness check first. A graph's first run on a new thread makes this read."""
    backend = sqlite_backend(path)
    append(backend, "one")  # the file, and this thread's connection to it
    statements: list[str] = []
    backend._opened().conn.set_trace_callback(statements.append)
    found = stamped_read(backend, Key("alice", "missing"))
    assert found.stamp is None and not found.value
    reads = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
    assert len(reads) == 2, reads  # the stamp's row, then the record's info
    assert "pragma_data_version" in reads[0]


def test_a_record_that_time_can_expire_or_slide_gets_no_stamp(path: Path, tmp_path: Path) -> None:
    backend = sqlite_backend(path)
    append(backend, "one")
    run(backend.touch_record(KEY, ttl=60.0))
    assert stamped_read(backend).stamp is None
    run(backend.touch_record(KEY, ttl=None))
    assert stamped_read(backend).stamp is not None
    assert stamped_read(backend, Key("alice", "missing")).stamp is None  # nothing to certify
    expiring = sqlite_backend(tmp_path / "ttl.db", default_ttl=60)
    append(expiring, "one")
    assert stamped_read(expiring).stamp is None


def test_an_encrypted_store_passes_stamps_through_but_not_sealed_documents(
    path: Path,
) -> None:
    backend = EncryptedStore(open_store(f"sqlite://{path}"), ENCRYPTION_KEY).backend
    append(backend, "secret")
    found = stamped_read(backend)
    assert [m["content"] for m in found.value] == ["secret"]
    assert found.stamp is not None and backend.unchanged_since(found.stamp)
    named = run(backend.stamped(KEY, lambda: backend.count_log(KEY, path=LOG), ["d"]))
    assert named.value == 1 and named.stamp is None


def test_a_store_without_the_key_gets_no_stamp_over_sealed_documents(path: Path) -> None:
    sealed = EncryptedStore(open_store(f"sqlite://{path}"), ENCRYPTION_KEY).backend
    run(sealed.write_modules(KEY, documents={"d": {"n": 1}}, writes=[]))
    plain = sqlite_backend(path)
    found = run(plain.stamped(KEY, lambda: plain.count_log(KEY, path=LOG), ["d"]))
    assert found.stamp is None and found.documents is None


def test_backends_that_cannot_certify_offer_no_stamp(tmp_path: Path) -> None:
    for url in ("memory://", f"json://{tmp_path}/j"):
        backend = open_store(url).backend
        append(backend, "one")
        found = stamped_read(backend)
        assert [m["content"] for m in found.value] == ["one"]
        assert found.stamp is None
        assert not backend.unchanged_since(found.stamp)


def test_a_stamped_operation_left_pending_on_a_closed_loop_closes_quietly_later(
    path: Path,
) -> None:
    """The operation's stamping slot belongs to its task's context: a task left pending when
    its loop is closed, closed later elsewhere, raises nothing, and nothing is stamped
    after it in this context."""
    backend = sqlite_backend(path)
    append(backend, "one")

    async def begin() -> Any:
        began = asyncio.Event()

        async def waiting() -> None:
            began.set()
            await asyncio.sleep(3600)

        task = asyncio.get_running_loop().create_task(backend.stamped(KEY, waiting))
        await began.wait()
        return task

    loop = asyncio.new_event_loop()
    task = loop.run_until_complete(begin())
    coroutine = task.get_coro()
    loop.close()
    task._log_destroy_pending = False
    coroutine.close()  # raised ValueError ("created in a different Context") before
    assert coroutine.cr_frame is None
    assert stamped_read(backend).stamp is not None  # a stamp as ever, taken afresh
