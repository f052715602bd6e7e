"""A real Chroma server (``chroma run``, from the chromadb package) on 127.0.0.1 for the tests.

Import ``chroma_url`` into a test module to get the fixture; the server starts once per test
session, on a free port, with its data in a temporary directory, and is stopped afterwards.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

START_TIMEOUT = 60.0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _chroma_command() -> list[str]:
    beside_python = Path(sys.executable).with_name("chroma")
    if beside_python.exists():
        return [str(beside_python)]
    found = shutil.which("chroma")
    if found is None:
        raise RuntimeError("the chroma command (from the chromadb package) is not installed")
    return [found]


@pytest.fixture(scope="session")
def chroma_url() -> Iterator[str]:
    """The URL of a Chroma server that lives as long as the test session."""
    data = tempfile.mkdtemp(prefix="chroma-server-")
    port = _free_port()
    log = open(Path(data) / "server.log", "wb")  # noqa: SIM115 - closed in finally
    server = subprocess.Popen(
        [*_chroma_command(), "run", "--host", "127.0.0.1", "--port", str(port), "--path", data],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=1).close()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"chroma run did not start: {(Path(data) / 'server.log').read_text()}"
                    ) from None
                time.sleep(0.2)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()
        shutil.rmtree(data, ignore_errors=True)
