"""``python -m praisonsession serve`` as a real subprocess on 127.0.0.1, for the tests and the
benchmark.

    server = SessionServer("sqlite:///tmp/s.db", llm_url=llm.url, token="t0ken").start()
    server.agent_url         # http://127.0.0.1:PORT/agent, once /health answers
    server.kill(); server.start()   # SIGKILL, then the same port and store again
    server.stop()            # SIGTERM (in-flight requests finish), SIGKILL if it lingers

    with SessionServer(...) as server: ...   # start; stop and remove its folder at the end

The first start listens on port 0: the system picks a free port as the server binds, and
``start`` reads it back (``ports.listening_port``), so no other process can take the port
between the choice and the bind. A restart reuses that port, which clients already hold.

The agents come from ``tests/remote_agents.py`` (the working directory of the process is a
temporary folder; ``PYTHONPATH`` holds the worktree and ``tests/``). The server's output goes
to a log file in that folder, whose tail is in the error if it fails to start. The folder
outlives stops and restarts (the log keeps every start's output) and goes with the with-block.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

import praisonsession
from ports import can_find_listening_ports, free_port, own_port

__all__ = ["LLM_ENV", "SessionServer", "free_port"]

TESTS = Path(__file__).resolve().parent
ROOT = Path(praisonsession.__file__).resolve().parent.parent
#: The environment variable the agent factories read the LLM's base URL from.
LLM_ENV = "REMOTE_TEST_LLM_URL"
START_TIMEOUT = 60.0


class SessionServer:
    """One ``praisonsession serve`` process; ``start`` again reuses its port and store."""

    def __init__(
        self,
        store_url: str,
        *,
        llm_url: str | None = None,
        token: str | None = None,
        agents: tuple[str, ...] = ("remote_agents:assistant",),
        args: tuple[str, ...] = (),
        port: int | None = None,
    ) -> None:
        self.store_url = store_url
        self.llm_url = llm_url
        self.token = token
        self.agents = agents
        self.args = args
        #: None until the first start has read the port it got (see the module).
        self.port = port
        self.workdir = Path(tempfile.mkdtemp(prefix="praisonsession-serve-"))
        self.log_path = self.workdir / "server.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def agent_url(self) -> str:
        return self.base_url + "/agent"

    def listen_args(self) -> list[str]:
        """Where the server listens: its port once known, else 0 (the system picks)."""
        return ["--host", "127.0.0.1", "--port", str(self.port or 0)]

    def command(self) -> list[str]:
        command = [sys.executable, "-m", "praisonsession", "serve", "--store", self.store_url]
        for agent in self.agents:
            command += ["--agent", agent]
        command += [*self.listen_args(), "--log-level", "warning"]
        return command + list(self.args)

    def environment(self) -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(TESTS), env.get("PYTHONPATH", "")])
        env["NO_PROXY"] = "127.0.0.1"
        env.pop("PRAISONSESSION_REMOTE_TOKEN", None)
        if self.token is not None:
            env["PRAISONSESSION_REMOTE_TOKEN"] = self.token  # not on the command line
        if self.llm_url is not None:
            env[LLM_ENV] = self.llm_url
        return env

    def start(self) -> SessionServer:
        if self.process is not None and self.process.poll() is None:
            return self
        if self.port is None and not can_find_listening_ports():  # no /proc: the old way
            self.port = free_port()
        log = open(self.log_path, "ab")  # noqa: SIM115 - the child owns it from here
        try:
            self.process = subprocess.Popen(
                self.command(),
                cwd=self.workdir,
                env=self.environment(),
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        finally:
            log.close()
        deadline = time.monotonic() + START_TIMEOUT
        while not self._serving():
            self._check_alive(deadline)
            time.sleep(0.05)
        return self

    def _serving(self) -> bool:
        """Whether this process listens (the port it got, on port 0, is then ours to keep)
        and answers /health: an answer from a process that took a restart's port meanwhile
        does not count."""
        assert self.process is not None
        bound = own_port(self.process.pid, self.port)
        if bound is None:
            return False
        self.port = bound
        try:
            return requests.get(self.base_url + "/health", timeout=1).status_code == 200
        except requests.RequestException:
            return False

    def _check_alive(self, deadline: float) -> None:
        assert self.process is not None
        if self.process.poll() is not None:
            raise RuntimeError(f"The server exited with {self.process.returncode}:\n{self.log}")
        if time.monotonic() > deadline:
            self.kill()
            raise RuntimeError(f"The server did not start in {START_TIMEOUT} s:\n{self.log}")

    @property
    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def kill(self) -> None:
        """SIGKILL: the process gets no chance to finish anything."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=30)

    def stop(self) -> None:
        """SIGTERM, as a service manager stops it; SIGKILL after 15 s."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.kill()

    def restart(self, *, hard: bool = False) -> SessionServer:
        self.kill() if hard else self.stop()
        return self.start()

    def __enter__(self) -> SessionServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)
