"""``python -m praisonsession ui`` as a real subprocess on 127.0.0.1, for the browser tests
and the docs' screenshot script; its ``/health`` answers once it serves."""

from __future__ import annotations

import sys
from pathlib import Path

from remote_server import SessionServer

__all__ = ["ServerWithMemories", "UIServer"]


class ServerWithMemories(SessionServer):
    """``praisonsession serve`` whose settings find memories in ``data_dir``
    (``PRAISONSESSION_DATA_DIR``), as the programs that wrote them did."""

    def __init__(self, store_url: str, *, data_dir: Path | None = None, **options: object):
        super().__init__(store_url, **options)  # type: ignore[arg-type]
        self.data_dir = data_dir

    def environment(self) -> dict[str, str]:
        env = super().environment()
        if self.data_dir is not None:
            env["PRAISONSESSION_DATA_DIR"] = str(self.data_dir)
        return env


class UIServer(ServerWithMemories):
    """``praisonsession ui --store URL`` (extra ``args`` such as ``--user-token u=t``), its
    memories in ``data_dir``."""

    def __init__(
        self,
        store_url: str,
        *,
        token: str | None = None,
        args: tuple[str, ...] = (),
        data_dir: Path | None = None,
    ):
        super().__init__(store_url, token=token, agents=(), args=args, data_dir=data_dir)

    @property
    def page_url(self) -> str:
        return self.base_url + "/"

    def command(self) -> list[str]:
        command = [sys.executable, "-m", "praisonsession", "ui", "--store", self.store_url]
        command += self.listen_args()
        return command + list(self.args)
