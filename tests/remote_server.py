"""``python -m praisonsession serve`` as a real subprocess on 127.0.0.1, for the tests and the
benchmark.

    server = SessionServer("sqlite:///tmp/s.db", llm_url=llm.url, token="t0ken").start()
    server.agent_url         # http://127.0.0.1:PORT/agent, once /health answers
    server.kill(); server.start()   # SIGKILL, then the same port and store again
    server.stop()            # SIGTERM (in-flight requests finish), SIGKILL if it lingers

The agents come from ``tests/remote_agents.py`` (the working directory of the process is a
temporary folder; ``PYTHONPATH`` holds the worktree and ``tests/``). The server's output goes
to a log file, whose tail is in the error if it fails to start.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

import praisonsession

__all__ = ["LLM_ENV", "SessionServer", "free_port"]

TESTS = Path(__file__).resolve().parent
ROOT = Path(praisonsession.__file__).resolve().parent.parent
#: The environment variable the agent factories read the LLM's base URL from.
LLM_ENV = "REMOTE_TEST_LLM_URL"
START_TIMEOUT = 60.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


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
        self.port = port or free_port()
        self.workdir = Path(tempfile.mkdtemp(prefix="praisonsession-serve-"))
        self.log_path = self.workdir / "server.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def agent_url(self) -> str:
        return self.base_url + "/agent"

    def command(self) -> list[str]:
        command = [sys.executable, "-m", "praisonsession", "serve", "--store", self.store_url]
        for agent in self.agents:
            command += ["--agent", agent]
        command += ["--host", "127.0.0.1", "--port", str(self.port), "--log-level", "warning"]
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
        self._wait_until_healthy()
        return self

    def _wait_until_healthy(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        assert self.process is not None
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"The server exited with {self.process.returncode}:\n{self.log}")
            try:
                if requests.get(self.base_url + "/health", timeout=1).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.05)
        self.kill()
        raise RuntimeError(f"The server did not answer /health in {START_TIMEOUT} s:\n{self.log}")

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
