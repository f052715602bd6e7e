"""Module trees to stored documents and back: what a store does with ``save_session_state``.

Each named module becomes one JSON document. The :class:`MessageLog` instances inside a tree
are taken out of it, by dotted path (``agent.history``), so that a store can append to a log
instead of rewriting it; a document keeps an empty placeholder where each log was. Loading
puts the stored logs back in their places and applies every module's state: all are checked
first, then all applied, or none is. Stores call these functions; they know nothing of stores.
"""

from __future__ import annotations

import logging
from typing import Any

from ..errors import InvalidIdError, InvalidValueError, StateDictError
from ..identifiers import check_key
from .message_log import MessageLog
from .module import StateModule, _plan_of, _snapshot_of

__all__ = [
    "attach_logs",
    "check_module_name",
    "check_modules",
    "load_states",
    "logs_of",
    "snapshot_module",
]

_logger = logging.getLogger("praisonsession")


def check_module_name(name: object) -> str:
    """A module's name: a state key without ``.``, which separates it from the names of the
    message logs inside it (``agent.memory``); with one it could be saved but not read back."""
    key = check_key(name, "module name")
    if "." in key:
        raise InvalidIdError(
            f"module name {key!r} contains '.', which separates a module from the logs inside "
            "it; use '_' instead."
        )
    return key


def check_modules(call: str, modules: dict[str, Any]) -> None:
    """Refuse, before anything is read or written, a name that cannot be read back or an
    object that is not a state module."""
    for name, module in modules.items():
        check_module_name(name)
        if not isinstance(module, StateModule):
            raise InvalidValueError(
                f"{call}({name}=...) got a {type(module).__name__}; pass StateModule instances."
            )


def snapshot_module(module: StateModule, name: str, logs: dict[str, MessageLog]) -> Any:
    """The module's document; its message logs are put in ``logs`` by dotted path instead."""
    return _snapshot_of(module, name, logs)


def logs_of(module: StateModule, name: str) -> dict[str, MessageLog]:
    """The message logs in a module tree, by dotted path."""
    return {path: sub for path, sub in module._walk(name).items() if isinstance(sub, MessageLog)}


def attach_logs(
    module: StateModule, name: str, document: Any, logs: dict[str, list[dict[str, Any]]]
) -> Any:
    """Put each stored log back where the module tree has a MessageLog placeholder."""
    for path, sub in module._walk(name).items():
        if not isinstance(sub, MessageLog):
            continue
        parts = path.split(".")[1:]
        if not parts:
            if document == {}:
                document = {"messages": logs.get(path, [])}
            continue
        node = document
        for part in parts[:-1]:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict) and node.get(parts[-1]) == {}:
            node[parts[-1]] = {"messages": logs.get(path, [])}
    return document


def load_states(
    modules: dict[str, StateModule], states: dict[str, Any], where: str, trusted: bool = False
) -> None:
    """Load ``states[name]`` into each module that has one: all are checked, then all are
    applied, or none is. A missing key raises; a stored key no module has is logged.

    ``trusted`` states were just decoded from a store, so they are neither checked nor copied.
    """
    actions = []
    missing: list[str] = []
    unexpected: list[str] = []
    for name, module in modules.items():
        if name in states:
            actions.extend(
                _plan_of(module, states[name], True, f"{name}.", missing, unexpected, trusted)
            )
    if missing:
        raise StateDictError(where, missing, unexpected)
    if unexpected:
        _logger.warning("Ignored stored keys that no module has: %s", unexpected)
    for apply in actions:
        apply()
