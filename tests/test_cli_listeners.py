"""``serve`` and ``ui`` as a newcomer first runs them, in a real process: a store path that is
not there, a port already in use and an address off loopback are each refused with one
``Error:`` line and the documented exit code, before uvicorn starts and before anything is
created."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from praisonsession import Session

pytestmark = pytest.mark.timeout(120)

AGENT = ("--agent", "remote_agents:assistant")  # tests/remote_agents.py, on PYTHONPATH


def command(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m praisonsession ARGS`` in ``cwd`` (with ``env`` added to a bare
    environment); a server that did start is stopped by the timeout, which fails the test."""
    return subprocess.run(
        [sys.executable, "-m", "praisonsession", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path), **(env or {})},
    )


def error_line(done: subprocess.CompletedProcess[str]) -> str:
    """The one line on stderr, which must be the error; nothing on stdout."""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), done.stderr
    assert done.stdout == ""
    return lines[0]


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A port on 127.0.0.1 that something else is listening on."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        yield listener.getsockname()[1]


@pytest.fixture
def store(tmp_path: Path) -> str:
    """A SQLite store that exists, with one session."""
    session = Session("s", "u", store=f"sqlite:///{tmp_path / 'kept.db'}")
    session.set_state("n", 1)
    session.close()
    return f"sqlite:///{tmp_path / 'kept.db'}"


@pytest.mark.parametrize(
    ("url", "where"), [("sqlite://missing.db", "missing.db"), ("json://nodir", "nodir")]
)
def test_ui_refuses_a_store_that_is_not_there_and_creates_nothing(
    tmp_path: Path, url: str, where: str
) -> None:
    done = command("ui", "--store", url, "--port", "0", cwd=tmp_path)
    assert done.returncode == 2
    assert error_line(done) == (
        f"Error: There is no store at {tmp_path / where}: nothing has been kept there yet. "
        "Check --store (sqlite://file.db is relative to this directory, sqlite:///file.db "
        "absolute) or the directory you run in."
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no file, no -wal, no -shm


@pytest.mark.parametrize("which", ["serve", "ui"])
def test_a_port_in_use_is_one_error_line_naming_it_and_what_to_do(
    tmp_path: Path, store: str, busy_port: int, which: str
) -> None:
    extra = AGENT if which == "serve" else ()
    done = command(which, "--store", store, "--port", str(busy_port), *extra, cwd=tmp_path)
    assert done.returncode == 3  # unavailable, as cli.md's table says
    assert error_line(done) == (
        f"Error: Port {busy_port} on 127.0.0.1 is already in use (another server is listening "
        "there, perhaps another praisonsession serve or ui): stop it, or choose a free port "
        f"with --port, e.g. --port {busy_port + 1}."
    )  # and no uvicorn INFO or ERROR line: error_line saw only this one


def test_an_address_this_machine_does_not_have_is_a_usage_error(tmp_path: Path, store: str) -> None:
    done = command("ui", "--store", store, "--host", "192.0.2.1", "--token", "t" * 40, cwd=tmp_path)
    assert done.returncode == 2
    assert error_line(done) == (
        "Error: Cannot listen on 192.0.2.1 port 8080: Cannot assign requested address. Check "
        "--host (an address of this machine, e.g. 127.0.0.1) and --port."
    )


def test_the_browsers_refusal_off_loopback_says_what_the_browser_can_do(
    tmp_path: Path, store: str
) -> None:
    done = command("ui", "--store", store, "--host", "0.0.0.0", cwd=tmp_path)
    assert done.returncode == 2
    line = error_line(done)
    assert line.startswith(
        "Error: Refusing to serve on '0.0.0.0' without a token: anyone who can reach that "
        "address could see every session of every user (the browser shows their state, "
        "history and memories; it cannot change them)."
    )
    assert "change every session" not in line and "api_key" not in line
    assert "--user-token USER=TOKEN" in line and "PRAISONSESSION_REMOTE_TOKEN" in line
    served = command("serve", "--store", store, "--host", "0.0.0.0", *AGENT, cwd=tmp_path)
    assert served.returncode == 2
    assert "could read and change every session" in error_line(served)  # the API can


@pytest.mark.parametrize("which", ["list", "ui"])
def test_with_an_encryption_key_set_a_missing_store_is_refused_all_the_same(
    tmp_path: Path, which: str
) -> None:
    """The key wraps the store (EncryptedStore): the file it would open is still looked for."""
    key = {"PRAISONSESSION_ENCRYPTION_KEY": "k" * 43 + "="}
    done = command(which, "--store", "sqlite://missing.db", cwd=tmp_path, env=key)
    assert done.returncode == 2
    assert error_line(done).startswith(f"Error: There is no store at {tmp_path / 'missing.db'}:")
    assert list(tmp_path.iterdir()) == []
