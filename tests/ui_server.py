"""``python -m praisonsession ui`` as a real subprocess on 127.0.0.1, for the browser tests
and the docs' screenshot script; its ``/health`` answers once it serves."""

from __future__ import annotations

import sys

from remote_server import SessionServer

__all__ = ["UIServer"]


class UIServer(SessionServer):
    """``praisonsession ui --store URL`` (extra ``args`` such as ``--user-token u=t``)."""

    def __init__(self, store_url: str, *, token: str | None = None, args: tuple[str, ...] = ()):
        super().__init__(store_url, token=token, agents=(), args=args)

    @property
    def page_url(self) -> str:
        return self.base_url + "/"

    def command(self) -> list[str]:
        command = [sys.executable, "-m", "praisonsession", "ui", "--store", self.store_url]
        command += ["--host", "127.0.0.1", "--port", str(self.port)]
        return command + list(self.args)
