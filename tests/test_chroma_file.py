"""Embedded Chroma's ``chroma.sqlite3`` is never opened by this process's own SQLite.

Chroma reaches the file through the SQLite inside its Rust engine; a connection of Python's
``sqlite3`` in the same process is a second copy that does not see the first's locks, and can
corrupt the file (it showed as ``disk I/O error`` under concurrent memory operations). What we
read and write there goes through a helper process (``recall/vectors/chroma_file.py``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from held import let_go_after_safety
from praisonsession.recall.vectors import chroma_file

pytestmark = pytest.mark.slow

# Runs in a process of its own, so the audit hook (never removable) stays there.
WATCHED = """
import json, sys
opened = []
def watch(event, args):
    if event == "sqlite3.connect":
        opened.append(str(args[0]))
sys.addaudithook(watch)

from praisonsession import AsyncSession, Session, erase_user
settings = {"data_dir": sys.argv[1]}
store = f"sqlite://{sys.argv[1]}/sessions.db"
for user in ("ada", "bob"):
    s = Session("s1", user, store=store, settings=settings)
    for i in range(5):
        s.add_memory(f"{user} note {i}: the boat needs a new mainsail")
    s.add_knowledge(f"{user} keeps the harbour chart")
    assert s.search_memory("mainsail"), "search found nothing"
    s.close()

import asyncio
async def concurrently():
    a = AsyncSession("s2", "ada", store=store, settings=settings)
    await asyncio.gather(*(a.add_memory(f"ada async note {i}") for i in range(8)),
                         *(a.search_memory("note") for _ in range(8)))
    await a.close()
asyncio.run(concurrently())
erase_user("bob", store, settings=settings)
print(json.dumps(opened))
"""


def test_memory_knowledge_and_erasure_never_open_chromas_file_in_process(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", WATCHED, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    opened = [Path(path).name for path in json.loads(done.stdout.splitlines()[-1])]
    assert "chroma.sqlite3" not in opened
    # the hook saw this process's own SQLite files: the session store and the lexical index
    assert "sessions.db" in opened
    assert any(name.endswith("-lexical.sqlite3") for name in opened), opened


def make_file(tmp_path: Path) -> Path:
    import sqlite3

    path = tmp_path / "chroma.sqlite3"
    with sqlite3.connect(path) as conn:  # not Chroma's: this process has no Chroma on it
        conn.execute("CREATE TABLE t (n INTEGER, b BLOB)")
        conn.execute("INSERT INTO t VALUES (7, x'0102')")
    conn.close()
    return path


def test_statements_run_in_turn_and_bytes_come_back_tagged(tmp_path: Path) -> None:
    path = make_file(tmp_path)
    counted, rows = chroma_file.run(
        path, [("SELECT count(*) FROM t", ()), ("SELECT n, b FROM t WHERE n = ?", (7,))]
    )
    assert counted == [(1,)]
    assert rows == [(7, "hex:0102")]
    chroma_file.forget(path)


def test_a_failing_statement_is_a_typed_error_and_the_helper_goes_on(tmp_path: Path) -> None:
    path = make_file(tmp_path)
    with pytest.raises(chroma_file.ChromaFileError, match="no such table: missing") as caught:
        chroma_file.run(path, [("SELECT * FROM missing", ())])
    assert caught.value.operational
    assert chroma_file.run(path, [("SELECT n FROM t", ())]) == [[(7,)]]


def test_a_file_that_is_not_there_is_not_made(tmp_path: Path) -> None:
    with pytest.raises(chroma_file.ChromaFileError, match="unable to open"):
        chroma_file.run(tmp_path / "chroma.sqlite3", [("SELECT 1", ())])
    assert not (tmp_path / "chroma.sqlite3").exists()


def test_a_helper_that_died_is_started_again(tmp_path: Path) -> None:
    path = make_file(tmp_path)
    assert chroma_file.run(path, [("SELECT n FROM t", ())]) == [[(7,)]]
    helper = chroma_file._worker._process
    assert helper is not None
    os.kill(helper.pid, signal.SIGKILL)
    helper.wait()
    assert chroma_file.run(path, [("SELECT n FROM t", ())]) == [[(7,)]]
    assert chroma_file._worker._process is not helper


def test_ctrl_c_in_a_terminal_leaves_the_helper_to_the_process_that_started_it(
    tmp_path: Path,
) -> None:
    path = make_file(tmp_path)
    chroma_file.run(path, [("SELECT 1", ())])
    helper = chroma_file._worker._process
    assert helper is not None
    os.kill(helper.pid, signal.SIGINT)  # what a terminal's Ctrl+C sends the process group
    assert chroma_file.run(path, [("SELECT n FROM t", ())]) == [[(7,)]]
    assert chroma_file._worker._process is helper
    assert helper.poll() is None


def test_a_forked_child_starts_its_own_helper(tmp_path: Path) -> None:
    path = make_file(tmp_path)
    chroma_file.run(path, [("SELECT 1", ())])
    parents = chroma_file._worker._process
    assert parents is not None
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its answer, and whose helper gave it, through the pipe
        try:
            rows = chroma_file.run(path, [("SELECT n FROM t", ())])
            mine = chroma_file._worker._process
            os.write(write, json.dumps([rows, mine is not None and mine.pid]).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        rows, helper = json.loads(pipe.read())
    os.waitpid(pid, 0)
    assert rows == [[[7]]]
    assert helper not in (False, parents.pid)
    assert parents.poll() is None  # the parent's helper is untouched
    assert chroma_file.run(path, [("SELECT n FROM t", ())]) == [[(7,)]]


def test_a_child_forked_while_a_thread_waits_for_the_helper_starts_its_own(
    tmp_path: Path,
) -> None:
    """A thread is waiting for the helper's answer when the process forks. The child has no
    such thread, so nothing of that wait may be left for it to finish (a buffered pipe's lock
    was, and the child hung closing its copy): it starts its own helper and answers, and the
    thread gets its answer once the file its statement waits for is let go."""
    import sqlite3

    path = make_file(tmp_path)
    held = tmp_path / "held.sqlite3"
    with sqlite3.connect(held) as conn:
        conn.execute("CREATE TABLE h (n INTEGER)")
    conn.close()
    holder = sqlite3.connect(held, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # the helper's read of it waits until the rollback
    answers: list[object] = []
    waiting = [
        ("INSERT INTO t VALUES (8, NULL)", ()),  # seen here: the helper has the request
        ("ATTACH DATABASE ? AS held", (str(held),)),
        ("SELECT count(*) FROM held.h", ()),  # waits for the holder
    ]
    thread = threading.Thread(target=lambda: answers.append(chroma_file.run(path, waiting)))
    thread.start()
    with sqlite3.connect(path) as watcher:
        while not watcher.execute("SELECT count(*) FROM t WHERE n = 8").fetchone()[0]:
            assert thread.is_alive(), answers
            time.sleep(0.001)
    watcher.close()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its own helper's answer, through the pipe
        try:
            os.write(write, json.dumps(chroma_file.run(path, [("SELECT n FROM t", ())])).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe, let_go_after_safety(lambda: os.kill(pid, signal.SIGKILL)):
        told = pipe.read()  # a child that hung is killed after SAFETY: nothing told
    os.waitpid(pid, 0)
    assert told, "the child hung in its fork handler"
    assert json.loads(told) == [[[7], [8]]]
    holder.rollback()
    thread.join()
    holder.close()
    assert answers == [[[], [], [(0,)]]]
    chroma_file.forget(path)


def test_a_process_that_used_the_helper_exits_leaving_nothing_running(tmp_path: Path) -> None:
    path = make_file(tmp_path)
    code = (
        "import sys\nfrom pathlib import Path\n"
        "from praisonsession.recall.vectors import chroma_file\n"
        "print(chroma_file.run(Path(sys.argv[1]), [('SELECT n FROM t', ())]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-W", "default", "-c", code, str(path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[[(7,)]]"
    assert "ResourceWarning" not in done.stderr  # "subprocess ... is still running", open pipes
