"""What a test holds that a call waits for (a lock, a hung server, a stuck embedder), and
when it lets go.

No test measures time. A test of "the call ends at its timeout" holds what the call waits for
and lets go only after :data:`SAFETY` seconds, far beyond every timeout the tests pass, and
letting go gives another outcome (the write made, an answer, another error) that the test
asserts against: a call that waited for it instead of its own timeout fails the test rather
than passing slowly.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator

__all__ = ["SAFETY", "let_go_after_safety"]

#: Seconds after which a test lets go of what it holds.
SAFETY = 30.0


@contextlib.contextmanager
def let_go_after_safety(release: Callable[[], object]) -> Iterator[None]:
    """Call ``release`` after :data:`SAFETY` seconds, or when the block ends if sooner."""
    timer = threading.Timer(SAFETY, release)
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
