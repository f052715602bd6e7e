"""A real Chroma server (``chroma run``, from the chromadb package) on 127.0.0.1 for the tests.

Import ``chroma_url`` into a test module to get the fixture; the server starts once per test
session, on a free port, with its data in a temporary directory, and is stopped afterwards.
A test that must look at the server's files starts a :class:`ChromaServer` of its own.
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


def chroma_command() -> list[str]:
    beside_python = Path(sys.executable).with_name("chroma")
    if beside_python.exists():
        return [str(beside_python)]
    found = shutil.which("chroma")
    if found is None:
        raise RuntimeError("the chroma command (from the chromadb package) is not installed")
    return [found]


class ChromaServer:
    """``chroma run`` on a free port of 127.0.0.1, its data in ``path`` (a new temporary
    directory, removed by ``stop``)."""

    def __init__(self) -> None:
        self.path = Path(tempfile.mkdtemp(prefix="chroma-server-"))
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._server: subprocess.Popen[bytes] | None = None

    def start(self) -> ChromaServer:
        log = open(self.path / "server.log", "ab")  # noqa: SIM115 - the child keeps it
        where = ["--host", "127.0.0.1", "--port", str(self.port), "--path", str(self.path)]
        self._server = subprocess.Popen(
            [*chroma_command(), "run", *where],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                urllib.request.urlopen(f"{self.url}/api/v2/heartbeat", timeout=1).close()
                return self
            except OSError:
                if self._server.poll() is not None or time.monotonic() > deadline:
                    self.halt()
                    raise RuntimeError(
                        f"chroma run did not start: {(self.path / 'server.log').read_text()}"
                    ) from None
                time.sleep(0.2)

    def halt(self) -> None:
        """Stop the server, keeping its files."""
        if self._server is None:
            return
        self._server.terminate()
        try:
            self._server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._server.kill()
            self._server.wait()
        self._server = None

    def stop(self) -> None:
        """Stop the server and remove its files."""
        self.halt()
        shutil.rmtree(self.path, ignore_errors=True)


@pytest.fixture(scope="session")
def chroma_url() -> Iterator[str]:
    """The URL of a Chroma server that lives as long as the test session."""
    server = ChromaServer().start()
    try:
        yield server.url
    finally:
        server.stop()
