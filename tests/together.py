"""Calls run on threads of their own, let go at once: what a race between writers needs."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


def together(*calls: Callable[[], Any]) -> None:
    """Each call on a thread of its own, all let go at once; back when all are done, raising
    the first error any of them raised."""
    start = threading.Barrier(len(calls))
    errors: list[BaseException] = []

    def go(call: Callable[[], Any]) -> None:
        start.wait()
        try:
            call()
        except BaseException as exc:  # raised again on the caller's thread
            errors.append(exc)

    threads = [threading.Thread(target=go, args=(call,)) for call in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
