"""Embedded Chroma's own SQLite file (``chroma.sqlite3``), read and written from another process.

Embedded Chroma (chromadb 1.x) reaches its file through the copy of SQLite built into its Rust
engine; Python's ``sqlite3`` is a second copy. Two copies of SQLite in one process do not see
each other's locks (POSIX locks belong to the process, and each copy tracks only its own), so a
connection of ours in the same process can read while Chroma writes, take Chroma's journal for
one left by a crash and roll it back, and drop Chroma's locks when it ends a read: the file can
be corrupted, and other processes can write under Chroma's feet (SQLite's "How To Corrupt",
section 2.2.1). It was seen here as ``disk I/O error`` on a ``PRAGMA data_version`` during
sixteen concurrent memory operations.

So every statement of ours on that file runs in one helper process per process
(``chroma_file_worker.py``, started at first use, standard library only), whose locks other
processes, this one's Chroma included, see. A statement costs a round trip over a pipe.
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

__all__ = ["ChromaFileError", "forget", "run"]

_WORKER = Path(__file__).with_name("chroma_file_worker.py")

Statement = tuple[str, Sequence[Any]]


class ChromaFileError(RuntimeError):
    """A statement on ``chroma.sqlite3`` failed (``name``: the ``sqlite3`` error's class), or the
    helper process running it stopped."""

    def __init__(self, message: str, name: str = "") -> None:
        super().__init__(message)
        self.name = name

    @property
    def operational(self) -> bool:
        """Whether SQLite refused the statement itself (``sqlite3.OperationalError``)."""
        return self.name == "OperationalError"


class _Worker:
    """The helper process and its pipes; one call at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None

    def ask(self, request: dict[str, Any]) -> list[Any]:
        line = (json.dumps(request) + "\n").encode("utf-8")
        with self._lock:
            if "close" in request and (self._process is None or self._process.poll() is not None):
                return []  # no helper: no connection to close
            for attempt in range(2):  # a helper that has died is started again, once
                process = self._started()
                assert process.stdin is not None and process.stdout is not None
                try:
                    answer = _exchange(process.stdin, process.stdout, line)
                except (BrokenPipeError, OSError):
                    answer = b""
                if answer:
                    break
                self._stop()
                if attempt == 1:
                    raise ChromaFileError(
                        "the helper process that reads Chroma's chroma.sqlite3 stopped "
                        f"(exit code {process.returncode}); see its error output above"
                    )
        reply = json.loads(answer)
        if "error" in reply:
            raise ChromaFileError(reply["message"], reply["error"])
        rows: list[Any] = reply["rows"]
        return rows

    def _started(self) -> subprocess.Popen[bytes]:
        if self._process is None or self._process.poll() is not None:
            try:
                self._process = subprocess.Popen(
                    [sys.executable, "-I", "-S", str(_WORKER)],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    bufsize=0,  # raw pipes: see _exchange
                )
            except OSError as exc:
                raise ChromaFileError(
                    f"could not start {sys.executable or 'Python'} to read Chroma's "
                    f"chroma.sqlite3 ({exc}); embedded memory needs this interpreter to be "
                    "runnable as a program: use a Chroma server or PostgreSQL otherwise"
                ) from exc
        return self._process

    def _stop(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            _close_pipes(process)
            process.wait()

    def stop_at_exit(self) -> None:
        """At the interpreter's exit: the helper ends with its stdin, and is waited for, so no
        process or pipe is left behind. Skipped if a thread is in a request right then."""
        if self._lock.acquire(blocking=False):
            try:
                self._stop()
            finally:
                self._lock.release()

    def abandon(self) -> None:
        """In a forked child: the parent's helper is the parent's; close our copies of its
        pipes without waiting for it (it is not our child)."""
        process, self._process = self._process, None
        if process is not None:
            _close_pipes(process)
            process.returncode = 0  # never waited for here


def _close_pipes(process: subprocess.Popen[bytes]) -> None:
    """Our ends of the helper's pipes, closed: its stdin's end is what tells it to stop."""
    for pipe in (process.stdin, process.stdout):
        if pipe is not None:
            pipe.close()


def _exchange(to_helper: IO[bytes], from_helper: IO[bytes], line: bytes) -> bytes:
    """Send one request line, read one answer line (b"" if the helper ended).

    The pipes are raw (unbuffered): a buffered pipe holds a lock while a thread reads it, and a
    child forked meanwhile inherits that lock held by a thread it does not have, so closing its
    copy of the pipe (``abandon``) would wait forever. An answer is one line and nothing follows
    it until the next request, so reading until a chunk ends the line reads no more than it.
    """
    sent = memoryview(line)
    while sent:
        sent = sent[to_helper.write(sent) :]
    chunks: list[bytes] = []
    while not chunks or not chunks[-1].endswith(b"\n"):
        chunk = from_helper.read(_CHUNK)
        if not chunk:
            return b""
        chunks.append(chunk)
    return b"".join(chunks)


_CHUNK = 1 << 16
_worker = _Worker()


def run(path: Path, statements: Sequence[Statement]) -> list[list[tuple[Any, ...]]]:
    """Run ``statements`` in turn on the helper's connection to ``path`` (a ``chroma.sqlite3``
    that exists; the connection stays open, with what its pragmas set): each one's rows."""
    request = {"path": str(path), "statements": [[sql, list(params)] for sql, params in statements]}
    return [[tuple(row) for row in rows] for rows in _worker.ask(request)]


def forget(path: Path) -> None:
    """Close the helper's connection to ``path`` (a store closed, or its file rewritten)."""
    _worker.ask({"path": str(path), "close": True})


@atexit.register
def _at_exit() -> None:
    _worker.stop_at_exit()


def _after_fork_in_child() -> None:
    global _worker
    _worker.abandon()
    _worker = _Worker()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
