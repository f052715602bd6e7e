"""The address ``serve`` and ``ui`` listen on, tried before the server starts: a port in use is
one ``Error:`` line naming it and what to do, not uvicorn's start-up log and its traceback."""

from __future__ import annotations

import errno
import socket

from .exit_codes import CommandFailed, ExitCode

__all__ = ["check_listen_address"]


def check_listen_address(host: str, port: int) -> None:
    """Bind ``host:port`` as the server will (``SO_REUSEADDR``, every address the host names)
    and let go at once; a port in use exits 3 (unavailable), an address this machine cannot
    listen on exits 2 (the option is wrong). A server that takes the port in between still
    fails in uvicorn, which only this small window leaves to it."""
    try:
        found = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except socket.gaierror as exc:
        raise CommandFailed(
            f"Cannot listen on --host {host!r}: {exc.strerror or exc}. Pass an address of this "
            "machine, e.g. --host 127.0.0.1.",
            ExitCode.USAGE,
        ) from None
    unavailable: OSError | None = None
    bound = 0
    for family, kind, proto, _, address in found:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6 and hasattr(socket, "IPPROTO_IPV6"):
                probe.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                probe.bind(address)
            except OSError as exc:
                if exc.errno != errno.EADDRNOTAVAIL:
                    raise _refusal(host, port, exc) from None
                unavailable = exc  # as asyncio does: that family is off here, try the others
            else:
                bound += 1
    if not bound and unavailable is not None:
        raise _refusal(host, port, unavailable)


def _refusal(host: str, port: int, exc: OSError) -> CommandFailed:
    if exc.errno == errno.EADDRINUSE:
        return CommandFailed(
            f"Port {port} on {host} is already in use (another server is listening there, "
            f"perhaps another praisonsession serve or ui): stop it, or choose a free port "
            f"with --port, e.g. --port {port + 1 if port < 65535 else 8080}.",
            ExitCode.STORE_UNAVAILABLE,
        )
    if exc.errno == errno.EACCES:
        return CommandFailed(
            f"Not allowed to listen on port {port} on {host} (ports below 1024 need root): "
            "choose a port of 1024 or above with --port, e.g. --port 8080.",
            ExitCode.USAGE,
        )
    return CommandFailed(
        f"Cannot listen on {host} port {port}: {exc.strerror or exc}. Check --host (an "
        "address of this machine, e.g. 127.0.0.1) and --port.",
        ExitCode.USAGE,
    )
