"""Peer benchmark: praisonaiagents 1.7.17 Session state operations, fully offline.

Runs in its own virtualenv, never in the project's:

    python3 -m venv /tmp/praison
    /tmp/praison/bin/pip install "praisonaiagents==1.7.17"
    /tmp/praison/bin/python benchmarks/peers/praisonai_workload.py --increments 300

praisonaiagents writes .praisonai/ into both HOME and the working directory, so the script
points both at fresh temp dirs before importing it and removes them afterwards. Each workload
gets its own working directory (hence its own short_term.db) so that one workload's rows
cannot crowd another's out of the state look-up. Network is refused: telemetry is switched
off by environment and any socket to a non-loopback address fails at once.

Workloads: A) set_state("score", 10) then increment_state("score", increment=5) and read it
back (15 expected); B) N calls of increment_state("hits"), ops/s and the value read back
(N expected); C) set_state("nested", {"a": [1, 2]}) and read it back. Prints one JSON object
on stdout; anything the library prints goes to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import socket
import sys
import tempfile
import time
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

LOOPBACK = ("127.", "::1", "localhost")
blocked: list[str] = []


def _refuse_network() -> None:
    """Make any non-loopback connection or DNS look-up fail fast, and remember it."""
    real_connect = socket.socket.connect
    real_getaddrinfo = socket.getaddrinfo

    def connect(self: socket.socket, address: Any) -> None:
        host = str(address[0]) if isinstance(address, tuple) else str(address)
        if self.family == socket.AF_UNIX or host.startswith(LOOPBACK):
            return real_connect(self, address)
        blocked.append(host)
        raise OSError(f"network disabled by benchmark: {host}")

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host is None or str(host).startswith(LOOPBACK):
            return real_getaddrinfo(host, *args, **kwargs)
        blocked.append(str(host))
        raise socket.gaierror(f"network disabled by benchmark: {host}")

    socket.socket.connect = connect  # type: ignore[method-assign]
    socket.getaddrinfo = getaddrinfo


@contextlib.contextmanager
def fresh_cwd(root: Path, name: str) -> Iterator[None]:
    workdir = root / name
    workdir.mkdir()
    previous = Path.cwd()
    os.chdir(workdir)
    try:
        yield
    finally:
        os.chdir(previous)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--increments", type=int, default=300)
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="praison-bench-"))
    (root / "home").mkdir()
    os.environ["HOME"] = str(root / "home")
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "PRAISONAI_HOME"):
        os.environ.pop(var, None)
    os.environ.update(
        DO_NOT_TRACK="true",
        PRAISONAI_TELEMETRY_DISABLED="true",
        PRAISONAI_DISABLE_TELEMETRY="true",
    )
    _refuse_network()
    out: dict[str, Any] = {"peer": "praisonaiagents", "version": version("praisonaiagents")}

    try:
        with contextlib.redirect_stdout(sys.stderr):
            with fresh_cwd(root, "import"):
                from praisonaiagents import Session

            with fresh_cwd(root, "a"):
                session = Session(session_id="bench-a", user_id="bench")
                session.set_state("score", 10)
                session.increment_state("score", increment=5)
                out["score_after_increment"] = session.get_state("score")
                out["storage"] = type(session.memory.memory_adapter).__name__

            with fresh_cwd(root, "b"):
                session = Session(session_id="bench-b", user_id="bench")
                start = time.perf_counter()
                for _ in range(args.increments):
                    session.increment_state("hits")
                elapsed = time.perf_counter() - start
                out["increments"] = args.increments
                out["increments_per_s"] = round(args.increments / elapsed, 1)
                out["hits_read_back"] = session.get_state("hits")

            with fresh_cwd(root, "c"):
                session = Session(session_id="bench-c", user_id="bench")
                session.set_state("nested", {"a": [1, 2]})
                out["nested_read_back"] = session.get_state("nested")
    finally:
        shutil.rmtree(root, ignore_errors=True)

    out["blocked_network_attempts"] = sorted(set(blocked))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
