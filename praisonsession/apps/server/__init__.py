"""The session server: ``praisonsession serve``, hosting agents for remote sessions.

It needs the ``server`` extra (FastAPI and uvicorn): ``pip install ".[server]"`` in a clone,
``pip install "praisonsession[server]"`` once published.
``create_app`` builds the ASGI app (``app``), ``prepare`` checks options and builds it the way
the command does, ``serve`` runs it with uvicorn. Nothing imports this package but the command.
"""

from __future__ import annotations

from typing import Any

__all__ = ["create_app", "prepare", "serve"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from .app import create_app

        return create_app
    if name in ("prepare", "serve"):
        from . import runner

        return getattr(runner, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
