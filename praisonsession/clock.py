"""The clock every TTL decision reads: the wall clock, or one a test puts in its place.

Expiry is decided by the stores from this clock (Redis from the server's own, unless a clock
is installed here, which is then sent with each call). A test freezes it and moves it on
instead of sleeping::

    from praisonsession import clock

    with clock.frozen() as now:
        session = Session("s", session_ttl=60)
        now.advance(61)
        assert session.is_expired()
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["ManualClock", "frozen", "installed", "now", "use"]

_source: Callable[[], float] | None = None  # None: the wall clock


def now() -> float:
    """Seconds since the epoch, by the installed clock (the wall clock by default)."""
    source = _source
    return time.time() if source is None else source()


def installed() -> bool:
    """True while a clock other than the wall clock is in use."""
    return _source is not None


def use(source: Callable[[], float] | None) -> None:
    """Read time from ``source`` from now on (None: the wall clock again)."""
    global _source
    _source = source


class ManualClock:
    """A clock that moves only when told to: ``advance(seconds)``."""

    def __init__(self, start: float | None = None) -> None:
        self._now = time.time() if start is None else float(start)
        self._lock = threading.Lock()

    def __call__(self) -> float:
        return self._now

    def advance(self, seconds: float) -> float:
        with self._lock:
            self._now += seconds
            return self._now


@contextmanager
def frozen(start: float | None = None) -> Iterator[ManualClock]:
    """A :class:`ManualClock` in place of the wall clock, for the ``with`` block."""
    manual = ManualClock(start)
    previous = _source
    use(manual)
    try:
        yield manual
    finally:
        use(previous)
