"""``--agent [PATH=]module:attr``: where each hosted agent comes from, and at which path.

The attribute is a factory: ``factory(session)`` gets the ``AsyncSession`` of one
(user_id, session_id) and returns its agent, ``session.Agent(...)`` (sync or async)::

    def assistant(session):
        return session.Agent(name="Assistant", instructions="Be brief.", memory=False)
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

from ...errors import InvalidValueError
from ...remote.wire import HEALTH

__all__ = ["load_agents", "load_factory"]

RESERVED = ("/docs", "/redoc", "/openapi.json", HEALTH)


def load_agents(specs: list[str] | tuple[str, ...], default_path: str) -> dict[str, Any]:
    """Agent path -> (spec, factory) for each ``[PATH=]module:attr`` (the plain form takes
    ``default_path``; the factories are imported now, so a typo fails at start-up)."""
    if not specs:
        raise InvalidValueError("Name at least one agent factory: --agent module:attr.")
    agents: dict[str, Any] = {}
    for spec in specs:
        path, _, target = spec.rpartition("=") if "=" in spec else (default_path, "", spec)
        path = check_path(path)
        if path in agents:
            raise InvalidValueError(
                f"Two agents at {path!r} ({agents[path][0]} and {target}); give each its "
                "own path: --agent /support=module:attr."
            )
        agents[path] = (target, load_factory(target))
    return agents


def check_path(path: str) -> str:
    if not path.startswith("/") or any(ch in path for ch in " ?#\\") or "//" in path:
        raise InvalidValueError(f"Agent path {path!r} must look like /agent (start with '/').")
    path = path.rstrip("/") or "/"
    if path in RESERVED or path.endswith(HEALTH) or "/store/" in path + "/":
        raise InvalidValueError(f"Agent path {path!r} is reserved; choose another, e.g. /agent.")
    return path


def load_factory(target: str) -> Any:
    """Import ``module:attr`` (modules in the working directory included) and check it is
    callable."""
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        raise InvalidValueError(
            f"--agent {target!r} is not module:attr; e.g. --agent myagents:assistant, where "
            "myagents.py defines def assistant(session): return session.Agent(...)."
        )
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # as `python -m` and uvicorn do
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise InvalidValueError(
            f"Cannot import {module_name!r} for --agent {target}: {str(exc).rstrip('.')}. "
            "Run the server from the folder that holds it, or put that folder on PYTHONPATH."
        ) from None
    factory: Any = module
    for part in attribute.split("."):
        factory = getattr(factory, part, None)
        if factory is None:
            raise InvalidValueError(f"{module_name!r} has no attribute {attribute!r}.")
    if not callable(factory):
        raise InvalidValueError(
            f"--agent {target} is a {type(factory).__name__}, not a factory; define "
            "def factory(session): return session.Agent(...)."
        )
    _check_takes_a_session(factory, target)
    return factory


def _check_takes_a_session(factory: Any, target: str) -> None:
    """Refuse now, before listening, a callable that cannot be called as ``factory(session)``
    (``os:getcwd``, a function of no arguments): otherwise the first chat gets HTTP 500."""
    import inspect

    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):  # some built-ins do not say: let the first call tell
        return
    try:
        signature.bind(object())
    except TypeError:
        raise InvalidValueError(
            f"--agent {target} cannot be called as {attribute_of(target)}(session): it takes "
            f"{signature}. An agent factory takes one argument, the session, and returns its "
            "agent: def factory(session): return session.Agent(...)."
        ) from None


def attribute_of(target: str) -> str:
    return target.partition(":")[2] or target
