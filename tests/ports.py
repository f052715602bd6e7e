"""Loopback ports for the servers the tests start, without the race of "pick a free port,
then start a server on it" (another process, or another xdist worker, may take the port in
between):

* a server that can bind port 0 itself does so, and :func:`listening_port` reads the port it
  got from the system (``/proc``), once it listens;
* a server that must be told its port (redis-server, postgres) takes :func:`free_port`, and
  its starter tries again on another port when it fails to start, checking that the server
  answering is its own;
* a test that needs an address where nothing listens holds :func:`closed_port`: bound and
  not listening, so connections are refused and nobody can take the port meanwhile.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["can_find_listening_ports", "closed_port", "free_port", "listening_port", "own_port"]

_PROC = Path("/proc")
_LISTEN = "0A"  # the state of a listening socket in /proc/net/tcp


def free_port() -> int:
    """A port of 127.0.0.1 free now (not once the caller binds it: see the module)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def closed_port() -> Iterator[int]:
    """A port of 127.0.0.1 where nothing listens for as long as the block runs: bound by this
    socket, which never listens, so a connection is refused and no server can take it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


def can_find_listening_ports() -> bool:
    """Whether :func:`listening_port` works here (Linux's ``/proc``)."""
    return (_PROC / "net" / "tcp").is_file()


def listening_port(pid: int) -> int | None:
    """The TCP port of 127.0.0.1 that process ``pid`` listens on, None while it listens on
    none (a server started on port 0 has not bound yet). A process listening on several is
    refused: the caller could not tell which is the server's."""
    inodes = set()
    try:
        for fd in (_PROC / str(pid) / "fd").iterdir():
            try:
                target = fd.readlink().name
            except OSError:  # closed meanwhile
                continue
            if target.startswith("socket:["):
                inodes.add(target[len("socket:[") : -1])
    except OSError:  # the process is gone
        return None
    ports = set()
    for line in (_PROC / "net" / "tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, state, inode = fields[1], fields[3], fields[9]
        address, port = local.split(":")
        if state == _LISTEN and inode in inodes and address == "0100007F":  # 127.0.0.1
            ports.add(int(port, 16))
    if len(ports) > 1:
        raise RuntimeError(f"process {pid} listens on several ports: {sorted(ports)}")
    return ports.pop() if ports else None


def own_port(pid: int, port: int | None) -> int | None:
    """The port process ``pid`` serves on, to be told apart from another process answering
    there: the one it listens on, once it does, if that is ``port`` or ``port`` is 0 or None
    (it bound port 0); None until then. Without ``/proc``, ``port`` as given (a caller then
    started it on :func:`free_port`)."""
    if not can_find_listening_ports():
        return port or None
    bound = listening_port(pid)
    return bound if bound is not None and port in (None, 0, bound) else None
