"""A real Chroma server (``chroma run``, from the chromadb package) on 127.0.0.1 for the tests.

Import ``chroma_url`` into a test module to get the fixture; the server starts once per test
session, on a port it binds itself (port 0: ``ports.own_port`` reads it back, so no other
process can take it between the choice and the bind), with its data in a temporary
directory, and is stopped afterwards.
A test that must look at the server's files starts a :class:`ChromaServer` of its own.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from ports import can_find_listening_ports, free_port, own_port

START_TIMEOUT = 60.0


def chroma_command() -> list[str]:
    beside_python = Path(sys.executable).with_name("chroma")
    if beside_python.exists():
        return [str(beside_python)]
    found = shutil.which("chroma")
    if found is None:
        raise RuntimeError("the chroma command (from the chromadb package) is not installed")
    return [found]


class ChromaServer:
    """``chroma run`` on 127.0.0.1, its data in ``path`` (a new temporary directory, removed
    by ``stop``); ``port`` and ``url`` once started."""

    def __init__(self) -> None:
        self.path = Path(tempfile.mkdtemp(prefix="chroma-server-"))
        #: 0 until started: the server binds port 0 and ``start`` reads the port it got.
        self.port = 0 if can_find_listening_ports() else free_port()
        self._server: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

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
        while not self._serving():
            if self._server.poll() is not None or time.monotonic() > deadline:
                self.halt()
                raise RuntimeError(
                    f"chroma run did not start: {(self.path / 'server.log').read_text()}"
                )
            time.sleep(0.2)
        return self

    def _serving(self) -> bool:
        """Whether this server listens (on the port it got, from port 0) and answers."""
        assert self._server is not None
        bound = own_port(self._server.pid, self.port)
        if bound is None:
            return False
        self.port = bound
        try:
            urllib.request.urlopen(f"{self.url}/api/v2/heartbeat", timeout=1).close()
        except OSError:
            return False
        return True

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
