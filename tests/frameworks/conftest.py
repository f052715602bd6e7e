"""The stores the adapters' tests run on: every backend by ``kind``, what one test's objects
share as ``store``, and, for the tests that start other processes, a ``url`` of each store
that many processes can open (every backend but the in-process memory one)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from backends import SERVERS, STORE_BACKENDS, store_url
from praisonsession import InMemorySession

SHARED = [kind for kind in STORE_BACKENDS if kind != "memory"]  # opened by URL from processes


@pytest.fixture(params=STORE_BACKENDS)
def kind(request: pytest.FixtureRequest) -> str:
    if request.param in SERVERS:
        request.getfixturevalue(SERVERS[request.param])
    return str(request.param)


@pytest.fixture
def store(kind: str, tmp_path: Path) -> Any:
    """What every adapter object of a test is given: a URL, or for memory one store instance
    (each ``memory://`` is a store of its own)."""
    return InMemorySession() if kind == "memory" else store_url(kind, tmp_path)


@pytest.fixture(params=SHARED)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param in SERVERS:
        request.getfixturevalue(SERVERS[request.param])
    return store_url(request.param, tmp_path)
