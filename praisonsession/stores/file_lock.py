"""A cross-process lock on a file: ``flock`` on POSIX, ``msvcrt.locking`` on Windows.

Both are released by the operating system when the holder dies, so a killed writer can never
leave a session locked. Taking the lock polls instead of blocking, so that a wait ends at the
call's deadline (``execution.remaining``) with a typed error instead of hanging.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from types import TracebackType

from ..errors import StoreUnavailableError
from ..execution import expired, remaining

_FIRST_WAIT = 0.0001
_LONGEST_WAIT = 0.002


class FileLock:
    def __init__(self, path: Path, timeout: float = 30.0) -> None:
        self.path = path
        self.timeout = timeout
        self._fd: int | None = None

    def __enter__(self) -> FileLock:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            self._acquire(fd)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return self

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
                    "Another process may be stuck; stop it, or raise lock_timeout."
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
