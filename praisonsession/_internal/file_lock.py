"""A cross-process lock on a file: ``flock`` on POSIX, ``msvcrt.locking`` on Windows.

Both are released by the operating system when the holder dies, so a killed holder can never
leave anything locked. Taking the lock polls instead of blocking, so that a wait ends at the
call's deadline (``runtime.remaining``) or at ``timeout`` with a typed error instead of hanging.
The JSON backend locks a session's files with it; embedded Chroma's openings of a folder take
turns with it.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from types import TracebackType

from ..errors import StoreUnavailableError
from .runtime import expired, remaining

_FIRST_WAIT = 0.0001
_LONGEST_WAIT = 0.002


class FileLock:
    """``with FileLock(path, timeout):`` holds ``path`` locked against other processes (and
    other descriptors of this one). ``advice``: what the error of a lock held past ``timeout``
    tells the caller to do."""

    def __init__(
        self,
        path: Path,
        timeout: float = 30.0,
        advice: str = "Another process may be stuck; stop it, or raise lock_timeout.",
    ) -> None:
        self.path = path
        self.timeout = timeout
        self.advice = advice
        self._fd: int | None = None

    def __enter__(self) -> FileLock:
        while True:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            except FileNotFoundError:  # its directory went with an erased user: make it again
                self.path.parent.mkdir(parents=True, exist_ok=True)
                continue
            try:
                self._acquire(fd)
                if _still_named(fd, self.path):
                    break
            except BaseException:
                os.close(fd)
                raise
            # the lock file was removed (an erasure) while we waited: lock the current one
            _unlock(fd)
            os.close(fd)
        self._fd = fd
        return self

    def remove(self) -> None:
        """Delete the lock file while holding it (an erased user keeps no lock files): a
        process that was waiting for it finds it gone and locks the file that replaces it."""
        if self._fd is not None:
            self.path.unlink(missing_ok=True)

    def _acquire(self, fd: int) -> None:
        if _try_lock(fd):
            return
        started = time.monotonic()
        patience = remaining(self.timeout)
        wait = _FIRST_WAIT
        while not _try_lock(fd):
            waited = time.monotonic() - started
            if waited > patience:
                if patience < self.timeout:
                    raise expired(f"waiting {waited:.1f} s for the lock {self.path}")
                raise StoreUnavailableError(
                    f"{self.path} stayed locked by another process for {self.timeout:g} s. "
                    + self.advice
                )
            time.sleep(wait)
            wait = min(wait * 2, _LONGEST_WAIT)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                _unlock(fd)
            finally:
                os.close(fd)


def _still_named(fd: int, path: Path) -> bool:
    """Whether ``path`` is still the file open at ``fd``."""
    try:
        named = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _try_lock(fd: int) -> bool:
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def _unlock(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)
